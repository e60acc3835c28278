"""Runs tests/e2e/explorer/drive.mjs (headless Chromium through playwright-core)
for the Explorer and docs-site tests and filters its console report."""
import json
import shutil
import subprocess
from pathlib import Path

from conftest import REPO

DRIVER = REPO / "tests" / "e2e" / "explorer" / "drive.mjs"
SHOTS = REPO / "tests" / "e2e" / "artifacts" / "explorer"


def drive(scenario, **args):
    node = shutil.which("node")
    assert node, "node is not installed"
    assert Path("/usr/bin/chromium").exists(), "Debian's chromium is not installed"
    assert (REPO / "tests/e2e/node_modules/playwright-core").exists(), \
        "tests/e2e/node_modules/playwright-core is missing: npm ci in tests/e2e"
    args.setdefault("shots", str(SHOTS))
    r = subprocess.run([node, str(DRIVER), scenario, json.dumps(args)], capture_output=True,
                       text=True, timeout=600, cwd=DRIVER.parent)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert not out.get("failure"), out["failure"] + "\n" + json.dumps(out["console"])
    assert out["pageErrors"] == [], out["pageErrors"]
    return out


def console_errors(out, hidden_queries=True, expected=()):
    """Console errors and warnings, less the ones the page's probe of GET
    /api/v1/queries causes on purpose (404 from a server that hides the
    saved-queries routes; 401 from one that has them, before the admin token
    is typed: the routes exist, the page shows its save and delete controls)
    and the failed requests a test provokes ((URL suffix, status) in
    expected)."""
    allowed = list(expected)
    if hidden_queries:
        allowed.append(("/api/v1/queries", 404))
    allowed.append(("/api/v1/queries", 401))
    bad = []
    for m in out["console"]:
        if any(m["url"].endswith(u) and f"status of {c} " in m["text"] for u, c in allowed):
            continue
        bad.append(m)
    return bad
