#!/usr/bin/env bash
# Fetches DuckDB 1.4.4 (shared library + C header) from the npm registry into
# third_party/duckdb/, checking each package's published integrity hash.
# Nothing fetched here is committed (third_party/ is git-ignored).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dest="$top/third_party/duckdb"
stamp="$dest/.fetched-1.4.4-r.1"
[ -f "$stamp" ] && [ -f "$dest/libduckdb.so" ] && [ -f "$dest/duckdb.h" ] && exit 0

lib_pkg='@duckdb/node-bindings-linux-x64@1.4.4-r.1'
lib_sri='sha512-fjYNc+t4/T7mhzZ57oJoIQaWvbYVvxhidcNNansQFiWnd6/JMLCULd4qnt8XI3Tt2BrZsraH690KSBIS3QPt0w=='
hdr_pkg='duckdb@1.4.4'
hdr_sri='sha512-hEJJ5hyVF0VLj3dmOLpsWrQR0b3d4Ykqtygm6iUXjHJDDnSqg/USKxcb5qvNrOhFYPgktayU6dXCtgPqcmmpog=='

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

check_sri() { # file expected-sri
    local got
    got="sha512-$(openssl dgst -sha512 -binary "$1" | base64 -w0)"
    if [ "$got" != "$2" ]; then
        echo "fetch-duckdb: integrity mismatch for $1" >&2
        echo "  expected $2" >&2
        echo "  got      $got" >&2
        exit 1
    fi
}

npm pack --silent "$lib_pkg" "$hdr_pkg" >/dev/null 2>npm.err || { cat npm.err >&2; exit 1; }
lib_tgz=$(ls duckdb-node-bindings-linux-x64-*.tgz)
hdr_tgz=$(ls duckdb-1.4.4.tgz)
check_sri "$lib_tgz" "$lib_sri"
check_sri "$hdr_tgz" "$hdr_sri"

tar xzf "$lib_tgz" package/libduckdb.so
tar xzf "$hdr_tgz" package/src/duckdb/src/include/duckdb.h
mkdir -p "$dest"
install -m 0755 package/libduckdb.so "$dest/libduckdb.so"
install -m 0644 package/src/duckdb/src/include/duckdb.h "$dest/duckdb.h"
touch "$stamp"
echo "fetch-duckdb: DuckDB 1.4.4 in $dest"
