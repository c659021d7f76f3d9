#!/usr/bin/env bash
# Generates Python code and type stubs for every proto under protos/ into one package tree
# (default libs/, so `novaberg.<svc>.v1.<svc>_pb2` mirrors the proto path). One generator, one place.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/libs}
python=${PYTHON:-$root/.venv/bin/python}
mkdir -p "$out"
cd "$root/protos"
mapfile -t protos < <(find novaberg -name '*.proto' | sort)
"$python" -m grpc_tools.protoc -I. \
  --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" "${protos[@]}"
