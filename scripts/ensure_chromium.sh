#!/usr/bin/env bash
# Makes sure a headless Chromium is there for tests/browser and prints its path.
# Order: $NOVABERG_CHROMIUM, chromium on PATH, else Debian's package via apt-get (needs root, as in CI).
# Exits 1 with a message saying what to do when none can be had; the tests then fail, never skip.
set -euo pipefail

found() {
    if [[ -n "${NOVABERG_CHROMIUM:-}" && -x "${NOVABERG_CHROMIUM}" ]]; then echo "${NOVABERG_CHROMIUM}"; return 0; fi
    for name in chromium chromium-browser; do
        if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
    done
    return 1
}

if path=$(found); then echo "$path"; exit 0; fi

if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_chromium: no chromium found and cannot install it (needs root and apt-get);" \
         "install Debian's package 'chromium' or set NOVABERG_CHROMIUM to a Chromium binary" >&2
    exit 1
fi
echo "ensure_chromium: installing Debian's chromium (apt-get, about a minute) …" >&2
start=$SECONDS
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq chromium; } >/tmp/ensure_chromium.log 2>&1; then
    tail -20 /tmp/ensure_chromium.log >&2
    echo "ensure_chromium: apt-get could not install chromium (log above, full log /tmp/ensure_chromium.log)" >&2
    exit 1
fi
if ! path=$(found); then
    echo "ensure_chromium: apt-get installed chromium, yet no chromium binary is on PATH" >&2
    exit 1
fi
echo "ensure_chromium: installed $path in $((SECONDS - start)) s" >&2
echo "$path"
