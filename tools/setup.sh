#!/usr/bin/env bash
# Checks what stallprof needs to build on Debian and installs what is missing: the Swift 6.3 toolchain on PATH
# (checked: install it yourself); zlib's headers (Debian's zlib1g-dev, for gzip input and pprof output) and
# elfutils' libdw headers (libdw-dev, for source lines and inlined frames from DWARF; the analyzer loads libdw.so.1
# at run time, and names functions without lines where it is missing). Installed with apt-get, as root or with
# sudo, when missing. The capture handler's unwinder is stallprof's own: no other system library. Safe to run again.
set -euo pipefail
command -v swift >/dev/null 2>&1 || { echo "setup: no 'swift' on PATH; install the Swift 6.3 toolchain" >&2; exit 1; }
missing=()
has_header() { printf '#include <%s>\n' "$1" | cc -E -x c - >/dev/null 2>&1 || [ -f "/usr/include/$1" ]; }
has_header zlib.h || missing+=(zlib1g-dev)
{ has_header elfutils/libdw.h && has_header dwarf.h; } || missing+=(libdw-dev)
if [ "${#missing[@]}" -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    if command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing ${missing[*]}" >&2
        { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"; } >/dev/null \
            || { echo "setup: could not install ${missing[*]}; install them (apt-get install ${missing[*]})" >&2; exit 1; }
    else
        echo "setup: headers missing; install them (Debian: ${missing[*]})" >&2
        exit 1
    fi
fi
