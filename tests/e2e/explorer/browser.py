"""Runs tests/e2e/explorer/drive.mjs (headless Chromium through playwright-core)
for the Explorer, CORS and docs-site tests and filters its console report.

A module that drives many scenarios starts one browser for all of them
(one_browser(), from a module-scoped fixture): a Chromium start costs
seconds of CPU on a loaded machine. Each scenario still gets a new browser
context and page (own cookies, storage and downloads), so what one test
leaves in the browser never reaches the next. Without one, drive() starts a
browser for the one scenario."""
import contextlib
import json
import queue
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from conftest import REPO

DRIVER = REPO / "tests" / "e2e" / "explorer" / "drive.mjs"
SHOTS = REPO / "tests" / "e2e" / "artifacts" / "explorer"
SCENARIO_TIMEOUT = 600


def _node():
    node = shutil.which("node")
    assert node, "node is not installed"
    assert Path("/usr/bin/chromium").exists(), "Debian's chromium is not installed"
    assert (REPO / "tests/e2e/node_modules/playwright-core").exists(), \
        "tests/e2e/node_modules/playwright-core is missing: npm ci in tests/e2e"
    return node


class Browser:
    """drive.mjs --serve: one Chromium; a scenario per request line, its
    report per answer line."""

    def __init__(self):
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([_node(), str(DRIVER), "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                     cwd=DRIVER.parent)
        self._lines = queue.Queue()
        # A reader thread, so a scenario that hangs fails after its time-out
        # instead of blocking the test run on readline().
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def stderr(self):
        self._stderr.seek(0)
        return self._stderr.read()[-8000:]

    def alive(self):
        return self.proc.poll() is None

    def run(self, scenario, args):
        self.proc.stdin.write(json.dumps({"scenario": scenario, "args": args}) + "\n")
        self.proc.stdin.flush()
        try:
            line = self._lines.get(timeout=SCENARIO_TIMEOUT)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(f"scenario {scenario} did not finish in {SCENARIO_TIMEOUT} s:\n"
                                 + self.stderr()) from None
        assert line is not None, f"the browser driver exited ({self.proc.wait()}):\n" + self.stderr()
        return json.loads(line)

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()


_shared = None


@contextlib.contextmanager
def one_browser():
    """One browser for every drive() inside (a module-scoped fixture's body);
    started at the first drive(), started again if it died."""
    global _shared
    _shared = []
    try:
        yield
    finally:
        for b in _shared:
            b.close()
        _shared = None


def _run(scenario, args):
    if _shared is None:
        r = subprocess.run([_node(), str(DRIVER), scenario, json.dumps(args)], capture_output=True,
                           text=True, timeout=SCENARIO_TIMEOUT, cwd=DRIVER.parent)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)
    if not _shared or not _shared[-1].alive():
        _shared.append(Browser())
    return _shared[-1].run(scenario, args)


def drive(scenario, **args):
    args.setdefault("shots", str(SHOTS))
    out = _run(scenario, args)
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
