"""Our Range decisions agree with nginx's except where we differ on purpose.

Runs tests/e2e/range_vs_nginx.sh (which prints the comparison table). nginx and
the unit-test binary that lists the cases are required (`make e2e` builds it;
scripts/install-deps.sh installs nginx).
"""
import os
import shutil
import subprocess
from pathlib import Path


TOP = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VITRINE_BUILD", TOP / "build"))
NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")


def test_range_decisions_match_nginx():
    assert (BUILD / "tests/http/test_range").exists(), "build/tests/http/test_range missing"
    assert shutil.which(NGINX) or os.access(NGINX, os.X_OK), "nginx is not installed"
    r = subprocess.run([str(TOP / "tests/e2e/range_vs_nginx.sh"), str(BUILD)],
                       capture_output=True, text=True, timeout=120)
    mismatches = [l for l in r.stdout.splitlines() if "| MISMATCH |" in l]
    assert r.returncode == 0 and not mismatches, r.stdout + r.stderr
