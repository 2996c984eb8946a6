#!/bin/sh
# Install Debian's Chromium for the web inbox's browser tests (Playwright drives
# /usr/bin/chromium headless). Idempotent and quiet: does nothing when it is already
# installed; prints apt's output only when something fails.
set -eu

if [ -x /usr/bin/chromium ]; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-chromium: need root (or sudo) to apt-get install chromium" >&2
        exit 1
    fi
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -qq && \
       $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "install-chromium: apt-get failed (output above)" >&2
    exit 1
fi

if [ ! -x /usr/bin/chromium ]; then
    echo "install-chromium: apt-get finished but /usr/bin/chromium is missing" >&2
    exit 1
fi
echo "install-chromium: $(/usr/bin/chromium --version 2>/dev/null || echo 'chromium installed')"
