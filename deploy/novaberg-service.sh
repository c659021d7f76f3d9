#!/bin/sh
# Image entry point: `novaberg-service <kzg|lzg|pipeline|pixie|log>` runs that service in the
# foreground. exec, so the service itself receives SIGTERM and drains (README: graceful shutdown).
set -eu
case "${1:-}" in
  kzg|lzg|pipeline|pixie|log) exec python -m "services.$1" ;;
  *) echo "usage: novaberg-service kzg|lzg|pipeline|pixie|log (got '${1:-}')" >&2; exit 64 ;;
esac
