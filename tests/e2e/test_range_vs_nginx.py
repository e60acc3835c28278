"""Our Range decisions agree with nginx's except where we differ on purpose.

Runs tests/e2e/range_vs_nginx.sh (which prints the comparison table); skipped
when nginx or the unit-test binary that lists the cases is not there.
"""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VITRINE_BUILD", TOP / "build"))
NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")


def test_range_decisions_match_nginx():
    if not (BUILD / "tests/http/test_range").exists():
        pytest.skip("build/tests/http/test_range missing (make unit)")
    if not shutil.which(NGINX) and not os.access(NGINX, os.X_OK):
        pytest.skip("nginx not installed")
    r = subprocess.run([str(TOP / "tests/e2e/range_vs_nginx.sh"), str(BUILD)],
                       capture_output=True, text=True, timeout=120)
    mismatches = [l for l in r.stdout.splitlines() if "| MISMATCH |" in l]
    assert r.returncode == 0 and not mismatches, r.stdout + r.stderr
