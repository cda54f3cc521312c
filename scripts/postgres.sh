#!/usr/bin/env bash
# A real, throwaway PostgreSQL 16 server with the pgvector extension, for tests and CI.
#
#   scripts/postgres.sh start        start one (or find the running one); prints its URL on stdout
#   scripts/postgres.sh url          prints the URL of the running server; error if none
#   scripts/postgres.sh psql ARGS…   runs the bundled psql against the running server
#   scripts/postgres.sh stop         stops it and removes its data, socket folder and state (idempotent)
#
# The URL is a libpq URI that reaches the server through its Unix socket only:
#   postgresql:///embeddings_test?host=/tmp/pg-XXXXXX&user=pgtest
# (user is pgtest when started as root, else the caller's own user name). The database
# embeddings_test already has `CREATE EXTENSION vector` done.
#
# Why pgserver: Debian 12 ships PostgreSQL 15 and no pgvector package, and this machine reaches
# no network but Debian's and PyPI's registries. The `pgserver` wheel on PyPI carries a complete,
# relocatable PostgreSQL 16 build (initdb, pg_ctl, postgres, psql, libpq) with pgvector compiled in
# (site-packages/pgserver/pginstall/{bin,lib,share}; share/postgresql/extension/vector.control).
# We only use those binaries; the wheel's Python code (and its Python dependencies) is never
# imported, hence `pip install --no-deps`. It goes into .build/postgres/venv (git-ignored), once.
#
# The server: a fresh data folder (mktemp -d) per start, trust auth, no TCP (listen_addresses=''),
# its socket in a short /tmp/pg-XXXXXX folder (socket paths are limited to ~107 bytes), durability
# off (fsync, full_page_writes, synchronous_commit) since the data is thrown away. PostgreSQL
# refuses to run as root: as root the server runs as the system user pgtest (created if missing).
# Progress goes to stderr; any failure ends with one `error: …` line and a non-zero exit.
set -euo pipefail

PGSERVER_VERSION="0.1.4"   # ships PostgreSQL 16.2 and pgvector 0.6.2 (manylinux x86_64/aarch64 wheels)
DB_NAME="embeddings_test"
PG_PORT="5432"             # only names the socket file (.s.PGSQL.5432); no TCP listener
SERVER_USER_AS_ROOT="pgtest"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE="$ROOT/.build/postgres"
VENV="$BASE/venv"
STATE="$BASE/state"
MARKER="$VENV/.pgserver-$PGSERVER_VERSION"

log() { echo "postgres.sh: $*" >&2; }
die() { echo "error: $*" >&2; exit 1; }

# --- installation --------------------------------------------------------------------------

pginstall_dir() {   # the pgserver/pginstall folder inside the venv
  local d
  for d in "$VENV"/lib/python*/site-packages/pgserver/pginstall; do
    if [ -x "$d/bin/postgres" ]; then echo "$d"; return 0; fi
  done
  return 1
}

install_pgserver() {
  if [ -f "$MARKER" ] && pginstall_dir >/dev/null; then return 0; fi
  command -v python3 >/dev/null 2>&1 || die "python3 not found (needed to install pgserver from PyPI)"
  log "installing pgserver==$PGSERVER_VERSION into ${VENV#"$ROOT"/}"
  rm -rf "$VENV"
  mkdir -p "$BASE"
  python3 -m venv "$VENV" >&2 || die "python3 -m venv $VENV failed"
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
    --no-deps --only-binary=:all: "pgserver==$PGSERVER_VERSION" >&2 \
    || die "pip install pgserver==$PGSERVER_VERSION failed"
  pginstall_dir >/dev/null || die "pgserver installed, but no pginstall/bin/postgres in $VENV"
  touch "$MARKER"
}

# --- state ---------------------------------------------------------------------------------

# The state file holds key=value lines; read them without executing anything.
declare -A S=()
read_state() {
  S=()
  [ -f "$STATE" ] || return 1
  local k v
  while IFS='=' read -r k v; do
    [ -n "$k" ] && S["$k"]="$v"
  done <"$STATE"
  [ -n "${S[data_dir]:-}" ] && [ -n "${S[url]:-}" ] && [ -n "${S[bin]:-}" ] && [ -n "${S[user]:-}" ]
}

# Runs a command as the server's user (S[user]), from / so that an unreadable cwd doesn't matter.
as_server() {
  if [ "$(id -u)" -eq 0 ] && [ "${S[user]}" != "root" ]; then
    (cd / && runuser -u "${S[user]}" -- "$@")
  else
    (cd / && "$@")
  fi
}

server_running() {   # the state's server answers pg_ctl status
  [ -d "${S[data_dir]:-/nonexistent}" ] || return 1
  as_server "${S[bin]}/pg_ctl" status -D "${S[data_dir]}" >/dev/null 2>&1
}

# Only removes folders this script made (named by mktemp below).
remove_tmp_dir() {
  local d="$1"
  case "$d" in
    /tmp/pg-??????|/tmp/pgdata-??????|/tmp/pginst-??????) rm -rf -- "$d" ;;
    "") ;;
    *) log "not removing unexpected path from state: $d" ;;
  esac
}

# --- commands ------------------------------------------------------------------------------

cmd_stop() {
  if ! read_state; then
    [ -f "$STATE" ] && rm -f "$STATE"
    log "no server recorded; nothing to stop"
    return 0
  fi
  if server_running; then
    log "stopping the server (pid ${S[pid]:-?})"
    as_server "${S[bin]}/pg_ctl" stop -D "${S[data_dir]}" -m fast -w -t 60 >&2 \
      || as_server "${S[bin]}/pg_ctl" stop -D "${S[data_dir]}" -m immediate -w -t 30 >&2 \
      || die "pg_ctl stop failed for ${S[data_dir]}"
    # pg_ctl returns once postmaster.pid is gone; give the process itself a moment to exit.
    local i pid="${S[pid]:-}"
    for i in $(seq 1 50); do
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  remove_tmp_dir "${S[data_dir]}"
  remove_tmp_dir "${S[socket_dir]:-}"
  remove_tmp_dir "${S[install_copy]:-}"
  rm -f "$STATE"
  log "stopped; removed its data and socket folders"
}

cmd_url() {
  read_state || die "no PostgreSQL server recorded in ${STATE#"$ROOT"/}; run scripts/postgres.sh start"
  server_running || die "the recorded PostgreSQL server (${S[data_dir]}) is not running; run scripts/postgres.sh start"
  echo "${S[url]}"
}

cmd_psql() {
  read_state || die "no PostgreSQL server recorded; run scripts/postgres.sh start"
  server_running || die "the recorded PostgreSQL server is not running; run scripts/postgres.sh start"
  [ -x "${S[bin]}/psql" ] || die "no psql in ${S[bin]}"
  exec "${S[bin]}/psql" -X "${S[url]}" "$@"
}

cmd_start() {
  mkdir -p "$BASE"
  # One start at a time (two CI steps, or a test and a person, starting together).
  exec 9>"$BASE/lock"
  flock -w 120 9 || die "could not take the lock ${BASE#"$ROOT"/}/lock"

  if read_state; then
    if server_running; then
      log "already running (data ${S[data_dir]})"
      echo "${S[url]}"
      return 0
    fi
    log "the recorded server is gone (stale state); cleaning up and starting a new one"
    cmd_stop
  fi

  install_pgserver
  local pgi; pgi="$(pginstall_dir)"

  # Who runs the server.
  local user
  if [ "$(id -u)" -eq 0 ]; then
    user="$SERVER_USER_AS_ROOT"
    if ! id -u "$user" >/dev/null 2>&1; then
      log "creating system user $user (PostgreSQL refuses to run as root)"
      useradd --system --no-create-home --shell /usr/sbin/nologin "$user" >&2 \
        || die "useradd $user failed"
    fi
  else
    user="$(id -un)"
  fi
  S=([user]="$user")

  # If that user cannot read the installation in place (say, the clone lives under /root),
  # run a world-readable copy of it from /tmp, removed by stop.
  local install_copy=""
  if ! as_server test -x "$pgi/bin/postgres" -a -r "$pgi/share/postgresql/postgres.bki" 2>/dev/null; then
    install_copy="$(mktemp -d /tmp/pginst-XXXXXX)"
    local site; site="$(dirname "$(dirname "$pgi")")"
    log "$user cannot read $pgi; running a copy in $install_copy"
    mkdir -p "$install_copy/pgserver"
    cp -a "$pgi" "$install_copy/pgserver/"
    cp -a "$site/pgserver.libs" "$install_copy/" 2>/dev/null || true   # psql's libpq ($ORIGIN rpath)
    chmod -R a+rX "$install_copy"
    pgi="$install_copy/pgserver/pginstall"
  fi
  local bin="$pgi/bin"

  local data sock
  data="$(mktemp -d /tmp/pgdata-XXXXXX)"
  sock="$(mktemp -d /tmp/pg-XXXXXX)"
  chmod 700 "$data" "$sock"
  if [ "$(id -u)" -eq 0 ]; then chown "$user": "$data" "$sock"; fi
  local url="postgresql:///$DB_NAME?host=$sock&user=$user"
  S=([user]="$user" [bin]="$bin" [data_dir]="$data" [socket_dir]="$sock" [install_copy]="$install_copy" [url]="$url")

  # Record the folders before anything can fail, so a failed start is cleaned by stop (and here).
  write_state() {
    {
      echo "data_dir=$data"
      echo "socket_dir=$sock"
      echo "install_copy=$install_copy"
      echo "bin=$bin"
      echo "user=$user"
      echo "port=$PG_PORT"
      echo "pid=${1:-}"
      echo "url=$url"
    } >"$STATE.tmp"
    mv "$STATE.tmp" "$STATE"
  }
  write_state ""
  fail() {
    local msg="$1"
    if [ -f "$data/server.log" ]; then tail -n 20 "$data/server.log" | sed 's/^/  server.log: /' >&2; fi
    (cmd_stop) >/dev/null 2>&1 || true
    die "$msg"
  }

  log "initdb (PostgreSQL $("$bin/postgres" --version | awk '{print $NF}'), user $user) in $data"
  as_server "$bin/initdb" -D "$data" -U "$user" --auth=trust --encoding=UTF8 --locale=C \
      --no-sync >"$BASE/initdb.log" 2>&1 \
    || { sed 's/^/  initdb: /' "$BASE/initdb.log" >&2; fail "initdb failed"; }
  rm -f "$BASE/initdb.log"
  cat >>"$data/postgresql.conf" <<EOF

# scripts/postgres.sh: a throwaway test server, reached through its Unix socket only.
listen_addresses = ''
port = $PG_PORT
unix_socket_directories = '$sock'
fsync = off
full_page_writes = off
synchronous_commit = off
max_connections = 100
EOF

  log "starting the server (socket $sock)"
  # 9>&-: the server must not inherit (and so hold forever) the lock taken above.
  as_server "$bin/pg_ctl" start -D "$data" -l "$data/server.log" -w -t 60 >/dev/null 2>&1 9>&- \
    || fail "pg_ctl start failed"
  local pid; pid="$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)"
  write_state "$pid"

  # Accepts connections: pg_ctl -w waited for that; pg_isready makes sure through the socket.
  local i
  for i in $(seq 1 60); do
    "$bin/pg_isready" -q -h "$sock" -p "$PG_PORT" -U "$user" -d postgres && break
    [ "$i" -eq 60 ] && fail "the server does not accept connections on $sock"
    sleep 0.5
  done

  local psql=("$bin/psql" -X -q -v ON_ERROR_STOP=1)
  "${psql[@]}" "postgresql:///postgres?host=$sock&user=$user" -c "CREATE DATABASE $DB_NAME" >&2 \
    || fail "CREATE DATABASE $DB_NAME failed"
  "${psql[@]}" "$url" -c "CREATE EXTENSION IF NOT EXISTS vector" >&2 \
    || fail "CREATE EXTENSION vector failed"
  local check
  check="$("${psql[@]}" "$url" -At -c "select 1, extversion from pg_extension where extname = 'vector'")" \
    || fail "psql \"$url\" -c 'select 1' failed"
  [ "${check%%|*}" = "1" ] || fail "unexpected answer from the server: $check"
  log "ready: PostgreSQL $("${psql[@]}" "$url" -At -c 'show server_version'), pgvector ${check#*|}, pid $pid"
  echo "$url"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  url) cmd_url ;;
  psql) shift; cmd_psql "$@" ;;
  *) echo "usage: scripts/postgres.sh start|stop|url|psql [ARGS…]" >&2; exit 2 ;;
esac
