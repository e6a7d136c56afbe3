#!/usr/bin/env bash
# Installs what stallprof needs to build on Debian: libunwind-dev (and pkg-config, which SwiftPM uses to find it).
# Safe to run again; does nothing when everything is present. Needs root (or sudo) only when something is missing.
set -euo pipefail
missing=()
dpkg -s libunwind-dev >/dev/null 2>&1 || missing+=(libunwind-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: installing ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null 2>&1 || { echo "setup: no 'swift' on PATH; install the Swift 6.3 toolchain" >&2; exit 1; }
