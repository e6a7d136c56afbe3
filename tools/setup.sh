#!/usr/bin/env bash
# Checks what stallprof needs to build on Debian and installs what is missing: the Swift 6.3 toolchain on PATH
# (checked: install it yourself), and zlib's headers (Debian's zlib1g-dev, for gzip input and pprof output;
# installed with apt-get, as root or with sudo, when missing). The capture handler's unwinder is stallprof's own:
# no other system library. Safe to run again.
set -euo pipefail
command -v swift >/dev/null 2>&1 || { echo "setup: no 'swift' on PATH; install the Swift 6.3 toolchain" >&2; exit 1; }
if ! printf '#include <zlib.h>\n' | cc -E -x c - >/dev/null 2>&1 && ! [ -f /usr/include/zlib.h ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    if command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing zlib1g-dev (zlib's headers)" >&2
        { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq zlib1g-dev; } >/dev/null \
            || { echo "setup: could not install zlib1g-dev; install it (apt-get install zlib1g-dev)" >&2; exit 1; }
    else
        echo "setup: zlib's headers are missing; install zlib (Debian: zlib1g-dev)" >&2
        exit 1
    fi
fi
