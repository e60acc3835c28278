#!/usr/bin/env bash
# make deploy-check: the deployment files are what they claim to be.
#  1. deploy/kubernetes/vitrine.yaml is the chart rendered with its defaults
#     (scripts/helm-render.py; helm itself is not installable here).
#  2. Every Kubernetes object passes its API schema (deploy/check/validate.mjs,
#     npm kubernetes-models), the compose file and the chart's datasets.toml
#     read (the latter with `vitrine check-config`, as the compose one).
#  3. deploy/systemd/vitrine.service passes `systemd-analyze verify` (with
#     ExecStart pointed at the built binary: /usr/local/bin is not installed).
#  4. vitrine runs in that unit's system call filter (SystemCallFilter= built
#     as systemd builds it, loaded with libseccomp): starts, answers HTTP and
#     psql, stops cleanly (deploy/check/systemd_sandbox.py).
# No image is built or pulled: this machine reaches no registry of images.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

$py "$top/scripts/helm-render.py" "$top/deploy/helm/vitrine" vitrine > "$work/rendered.yaml"
if ! diff -u "$top/deploy/kubernetes/vitrine.yaml" "$work/rendered.yaml"; then
    echo "deploy/kubernetes/vitrine.yaml is stale: scripts/helm-render.py deploy/helm/vitrine vitrine > deploy/kubernetes/vitrine.yaml"
    fail=1
fi
(cd "$top/deploy/check" && node validate.mjs "$top/deploy/kubernetes/vitrine.yaml") || fail=1

$py - "$top/deploy/kubernetes/vitrine.yaml" "$work/k8s.toml" "$top/deploy/compose/compose.yaml" <<'PY' || fail=1
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d["kind"] == "ConfigMap":
        open(sys.argv[2], "w").write(d["data"]["datasets.toml"])
c = yaml.safe_load(open(sys.argv[3]))
need = {"s3", "writer", "reader1", "reader2", "reader3", "nginx"}
assert need <= set(c["services"]), set(c["services"])
for s in ("writer", "reader1"):
    assert c["services"][s]["read_only"] is True
PY
"$build/vitrine" check-config "$work/k8s.toml" || fail=1
"$build/vitrine" check-config "$top/deploy/compose/datasets.toml" || fail=1

sed "s|/usr/local/bin/vitrine|$build/vitrine|" "$top/deploy/systemd/vitrine.service" > "$work/vitrine.service"
out=$(systemd-analyze verify "$work/vitrine.service" 2>&1) || { echo "$out"; fail=1; }
[ -z "$out" ] || { echo "systemd-analyze verify: $out"; fail=1; }

$py "$top/deploy/check/systemd_sandbox.py" "$top/deploy/systemd/vitrine.service" "$build/vitrine" \
    || fail=1

[ $fail = 0 ] && echo "deploy-check: 5 passed, 0 failed" || { echo "deploy-check: failed"; exit 1; }
