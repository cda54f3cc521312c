#!/usr/bin/env bash
# Installs the system packages the build needs, only when they are missing:
# OpenBLAS (Debian: libopenblas-dev), zlib (zlib1g-dev), libpq (libpq-dev) and libmicrohttpd
# (libmicrohttpd-dev, for `embeddings serve`), all found through pkg-config.
set -euo pipefail
need=()
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if ! pkg-config --exists openblas 2>/dev/null; then need+=(libopenblas-dev); fi
if ! pkg-config --exists zlib 2>/dev/null; then need+=(zlib1g-dev); fi
if ! pkg-config --exists libpq 2>/dev/null; then need+=(libpq-dev); fi
if ! pkg-config --exists libmicrohttpd 2>/dev/null; then need+=(libmicrohttpd-dev); fi
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "installing: ${need[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
pkg-config --exists openblas || { echo "error: OpenBLAS still not found by pkg-config" >&2; exit 1; }
pkg-config --exists zlib || { echo "error: zlib still not found by pkg-config" >&2; exit 1; }
pkg-config --exists libpq || { echo "error: libpq still not found by pkg-config" >&2; exit 1; }
pkg-config --exists libmicrohttpd || { echo "error: libmicrohttpd still not found by pkg-config" >&2; exit 1; }
