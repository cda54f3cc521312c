#!/usr/bin/env bash
# The official `openai` Python client (from PyPI, in a venv under .build/openai-venv, git-ignored)
# against `embeddings serve`, unchanged but for base_url: embeddings.create on a string and on a
# list, as float and as base64, must give embed's vectors (cosine >= 0.999999), with an API key;
# chat.completions.create (whole and streamed), .parse (a pydantic response_format) and a tool call
# with its follow-up on the chat model; then SIGTERM must end the server with status 0 within 10 s. See Benchmarks/peers/openai_client_check.py.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=".build/openai-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import openai" 2>/dev/null; then
    echo "openai-client-check: installing openai into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "openai==3.51.0"
fi
bin="${EMBEDDINGS_BIN:-.build/release/embeddings}"
[ -x "$bin" ] || swift build -c release --product embeddings >/dev/null
work="$(mktemp -d)"
pid=""
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
printf 'check-key-%s\n' "$$" > "$work/key"
mkfifo "$work/stderr"
"$bin" serve --port 0 --api-key-file "$work/key" 2>"$work/stderr" &
pid=$!
exec 3<"$work/stderr"
port=""
# The ready line names the port; nothing else is waited for.
while IFS= read -r line <&3; do
    case "$line" in
        "listening on http://"*) port="${line#listening on http://127.0.0.1:}"; port="${port%% *}"; break ;;
        *) echo "$line" >&2 ;;
    esac
done
[ -n "$port" ] || { echo "error: embeddings serve did not start" >&2; exit 1; }
# The request log keeps flowing to a file, so the pipe never fills.
cat <&3 > "$work/log" &
logger=$!
"$venv/bin/python" Benchmarks/peers/openai_client_check.py "$bin" "http://127.0.0.1:$port/v1" "$(cat "$work/key")"
kill -TERM "$pid"
start=$(date +%s)
status=0
wait "$pid" || status=$?
pid=""
wait "$logger" || true
elapsed=$(( $(date +%s) - start ))
echo "server log:"; sed 's/^/  /' "$work/log"
[ "$status" -eq 0 ] || { echo "error: serve exited $status after SIGTERM" >&2; exit 1; }
[ "$elapsed" -le 10 ] || { echo "error: serve took ${elapsed} s to exit after SIGTERM" >&2; exit 1; }
echo "openai-client-check: ok (SIGTERM: exit 0 in ${elapsed} s)"
