#!/bin/sh
# Install Debian's headless-capable Chromium for the web inbox's browser tests.
# Idempotent and quiet: does nothing when /usr/bin/chromium already exists.
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

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null

if [ ! -x /usr/bin/chromium ]; then
    echo "install-chromium: apt-get finished but /usr/bin/chromium is missing" >&2
    exit 1
fi
echo "install-chromium: $(/usr/bin/chromium --version 2>/dev/null || echo chromium installed)"
