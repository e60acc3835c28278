#!/usr/bin/env bash
# Compares our Range decisions (src/http/range.c) with nginx's on the same
# questions. The cases come from the unit-test table (`test_range --cases`);
# nginx serves files of the same sizes on a loopback port, and for every case
# we record nginx's status and Content-Range next to ours. A difference is
# fine only when the table marks it as intentional (its nginx column); any
# other difference fails the script. Prints a Markdown table.
#
# Usage: tests/e2e/range_vs_nginx.sh [BUILD_DIR]   (default: build)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-${VITRINE_BUILD:-$top/build}}
cases_bin=$build/tests/http/test_range
nginx=${NGINX:-/usr/sbin/nginx}
[ -x "$cases_bin" ] || { echo "missing $cases_bin (run make unit)" >&2; exit 2; }
[ -x "$nginx" ] || { echo "nginx not found at $nginx" >&2; exit 2; }

work=$(mktemp -d)
ngx_pid=
cleanup() {
    [ -n "$ngx_pid" ] && kill "$ngx_pid" 2>/dev/null && wait "$ngx_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/www"
for size in 0 1 1000 10000; do
    head -c "$size" /dev/urandom >"$work/www/f$size.bin"
done
# nginx cannot bind port 0 and report it. A port probed free may be taken
# before nginx binds it (a neighbour test's server, a client's local port):
# nginx then logs 'Address already in use' and it starts again on another
# port; it is up when nginx itself answers (Server: nginx), not whoever else
# holds the port.
start_nginx() {
    port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    : >"$work/error.log"
    cat >"$work/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $work/t1; proxy_temp_path $work/t2; fastcgi_temp_path $work/t3;
    uwsgi_temp_path $work/t4; scgi_temp_path $work/t5;
    server { listen 127.0.0.1:$port; root $work/www; }
}
CONF
    "$nginx" -p "$work" -c "$work/nginx.conf" -e "$work/error.log" &
    ngx_pid=$!
    for _ in $(seq 100); do
        grep -q "Address already in use" "$work/error.log" && return 1
        hdrs=$(curl -s -m 1 -o /dev/null -D - "http://127.0.0.1:$port/f1.bin" 2>/dev/null || true)
        grep -qi '^server: nginx' <<<"$hdrs" && return 0
        kill -0 "$ngx_pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
up=
for _ in 1 2 3 4 5; do
    if start_nginx; then up=1; break; fi
    kill "$ngx_pid" 2>/dev/null; wait "$ngx_pid" 2>/dev/null || true
    ngx_pid=
done
[ -n "$up" ] || { echo "nginx did not start:" >&2; cat "$work/error.log" >&2; exit 2; }

# ask METHOD TOTAL HAS_HEADER HEADER -> "status|content-range"
ask() {
    local args=(-s -o /dev/null -D - "http://127.0.0.1:$port/f$2.bin")
    [ "$1" = HEAD ] && args+=(-I)
    [ "$3" = 1 ] && args+=(-H "Range: $4")
    curl "${args[@]}" | tr -d '\r' | awk '
        /^HTTP\// { st = $2 }
        tolower($1) == "content-range:" { $1 = ""; sub(/^ /, ""); cr = $0 }
        END { printf "%s|%s\n", st, cr }'
}

show() { printf '%s' "$1" | sed 's/\t/\\t/g; s/|/\\|/g'; }

fail=0
echo "| size | Range | vitrine | vitrine Content-Range | nginx | nginx Content-Range | verdict | note |"
echo "|---|---|---|---|---|---|---|---|"
while IFS='|' read -r total has header ours our_cr nginx_diff note; do
    IFS='|' read -r st cr < <(ask GET "$total" "$has" "$header")
    if [ "$st" = "$ours" ] && { [ "$st" != 206 ] && [ "$st" != 416 ] || [ "$cr" = "$our_cr" ]; }; then
        verdict=same
    elif [ "$nginx_diff" != 0 ] && [ "$st" = "$nginx_diff" ]; then
        verdict=intentional
    else
        verdict=MISMATCH
        fail=1
    fi
    [ "$has" = 1 ] && h="$(show "$header")" || h="(none)"
    echo "| $total | \`$h\` | $ours | $our_cr | $st | $cr | $verdict | $note |"
done < <("$cases_bin" --cases)

# HEAD is not in the unit table: range handling belongs to GET only (RFC 9110
# §14.2), so the adapter never passes Range to http_range_parse for HEAD.
IFS='|' read -r st cr < <(ask HEAD 1000 1 "bytes=0-5")
verdict=intentional
[ "$st" = 200 ] && verdict=same
echo "| 1000 | \`bytes=0-5\` (HEAD) | 200 |  | $st | $cr | $verdict | RFC 9110 14.2: Range is for GET only |"

exit $fail
