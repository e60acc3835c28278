#!/usr/bin/env bash
# `make bench`: every scenario of bench/README.md beside its floor, then a
# table. Usage: bench/run.sh [BUILD_DIR]   (knobs: see bench/bench.py)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
for tool in wrk nginx curl; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is missing; run ./scripts/install-deps.sh" >&2; exit 1; }
done
# BENCH_SCALE=1: the lazy datasets bigger than memory instead (bench/scale.py).
if [ "${BENCH_SCALE:-0}" = 1 ]; then
    exec /usr/bin/python3 "$top/bench/scale.py" "$build"
fi
# BENCH_SIZING=1: the sizing table of docs/operations.md instead (bench/sizing.py).
if [ "${BENCH_SIZING:-0}" = 1 ]; then
    exec /usr/bin/python3 "$top/bench/sizing.py" "$build"
fi
/usr/bin/python3 "$top/bench/bench.py" "$build"
# The PostgreSQL listener's scenarios (P1, P2), beside their own floors
# (bench/README.md, "pgwire"); BENCH_PGWIRE=0 leaves them out.
if [ "${BENCH_PGWIRE:-1}" = 1 ]; then
    exec /usr/bin/python3 "$top/bench/pgwire.py" "$build"
fi
