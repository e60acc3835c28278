"""Black-box test harness: starts the real vitrine binary on 127.0.0.1 with a
config written by the test, and talks to it with real HTTP clients.

Fixtures:
  vt        -> a factory: vt(config_text, env=..., wait="ready"|"listening",
               gate=build_gate) returns a running Server; every server is
               stopped at teardown and its log is checked for sanitizer reports.
  build_gate -> a BuildGate: hold(name) keeps that dataset's builds in
               "building" until release(name) (pass it as vt(..., gate=)).
  datadir   -> a per-test directory for generated Parquet files.
Helpers:
  sql(*statements)            run SQL with DuckDB (build/vt-sql); rows of the last
  write_parquet(path, select) write the rows of a SELECT to a Parquet file
  delta_corpus()              the shared Delta tables (../shared/delta-tables), or None
"""
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests

import contract_rec

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VITRINE_BUILD", REPO / "build"))
VITRINE = BUILD / "vitrine"
VTSQL = BUILD / "vt-sql"


def _data_vtsql():
    """The vt-sql that writes test data (sql(), write_parquet()): the plain
    build's (build/) when it is there and not older than its source, even
    when BUILD is the sanitizer build. The data needs no sanitizer, and a
    plain vt-sql starts on half the CPU of an ASan one (~35 ms against ~80;
    hundreds of runs per suite). Else BUILD's."""
    plain = REPO / "build" / "vt-sql"
    try:
        if plain.stat().st_mtime >= (REPO / "tools" / "vt-sql.c").stat().st_mtime:
            return plain
    except FileNotFoundError:
        pass
    return VTSQL


DATA_VTSQL = _data_vtsql()


def delta_corpus():
    """The shared Delta corpus: $VT_DELTA_CORPUS, else shared/delta-tables in
    the directory above the repository (or above that, for worktrees one level
    deeper). The path is returned as found: ../shared may be a symbolic link."""
    cands = [os.environ.get("VT_DELTA_CORPUS"), REPO.parent / "shared" / "delta-tables",
             REPO.parent.parent / "shared" / "delta-tables"]
    for cand in cands:
        if cand and Path(cand).is_dir():
            return Path(cand)
    return None


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "serial: asserts wall-clock bounds; `make e2e` runs these alone, after the "
                   "parallel pass")


# `make e2e` hands whole modules to its two pytest-xdist workers
# (--dist loadfile: a module's module- and session-scoped fixtures are set up
# once, not once on each worker), in collection order. The longest modules
# (wall seconds per module, from a whole run with two workers) are collected
# first, so the last module a worker takes is a short one and the two
# workers end together. A new module that takes a minute belongs here.
SLOW_MODULES_FIRST = (
    "test_sources_s3.py", "test_atomicity.py", "test_arrow_ipc.py", "test_delta_corpus.py",
    "test_arrow_http.py", "test_differential.py", "test_explorer.py", "test_mcp.py",
    "test_hostile_http.py", "test_pgwire.py", "test_queries.py", "test_auth_bearer.py",
    "test_swagger_ui.py", "test_explore_api.py", "test_index_memory.py", "test_openapi.py",
    "test_pgwire_bi.py", "test_hostile_saved.py", "test_export.py", "test_mcp_conformance.py",
    "test_hostile_catalog.py", "test_docs_site.py", "test_pgwire_hostile.py",
)


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(SLOW_MODULES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: keeps the rest


def sql(*statements, db=None):
    """Runs statements with DuckDB; returns the rows of the last as lists of text."""
    cmd = [str(DATA_VTSQL)]
    if db:
        cmd += ["-d", str(db)]
    cmd += list(statements)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def write_parquet(path, select, options=""):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    opts = "FORMAT parquet" + (", " + options if options else "")
    sql(f"COPY ({select}) TO '{path}' ({opts})")
    return path


class Server:
    def __init__(self, workdir, config_text, env=None, args=None):
        self.workdir = Path(workdir)
        self.config_path = self.workdir / "datasets.toml"
        self.config_path.write_text(config_text)
        self.config_text = config_text
        self.log_path = self.workdir / f"vitrine-{time.monotonic_ns()}.log"
        self.env = dict(os.environ)
        self.env.setdefault("VITRINE_LOG", "debug")
        self.env.pop("ADMIN_TOKEN", None)
        if env:
            self.env.update(env)
        self.args = args if args is not None else ["--config", str(self.config_path)]
        self.proc = None
        self.port = None
        self.prefix = ""
        m = re.search(r'^\s*prefix\s*=\s*"([^"]*)"', config_text, re.M)
        if m:
            self.prefix = m.group(1)

    def start(self, timeout=30):
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([str(VITRINE)] + self.args, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=self.env, cwd=self.workdir)
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = re.search(r"listening on http://[^:]+:(\d+)", self.log())
            if m:
                self.port = int(m.group(1))
                contract_rec.server_started(self)
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"vitrine exited with {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.02)
        raise RuntimeError("vitrine did not start listening:\n" + self.log())

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def url(self, path):
        return f"{self.base}{self.prefix}{path}"

    def get(self, path, **kw):
        kw.setdefault("timeout", 30)
        return requests.get(self.url(path), **kw)

    def head(self, path, **kw):
        kw.setdefault("timeout", 30)
        return requests.head(self.url(path), **kw)

    def post(self, path, body=None, **kw):
        kw.setdefault("timeout", 60)
        if body is not None and "data" not in kw:
            kw["json"] = body
        return requests.post(self.url(path), **kw)

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                last = self.get("/readyz", timeout=5)
                if last.status_code == 200:
                    return last.json()
            except requests.ConnectionError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"not ready after {timeout}s: {last and last.text}\n{self.log()}")

    def wait_state(self, name, states, timeout=60):
        deadline = time.time() + timeout
        st = None
        while time.time() < deadline:
            r = self.get(f"/api/v1/datasets/{name}/status", timeout=5)
            if r.status_code == 200:
                st = r.json()
                if st["state"] in states:
                    return st
            time.sleep(0.05)
        raise AssertionError(f"{name} not in {states}: {st}\n{self.log()}")

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        contract_rec.server_stopping(self)
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stacks = thread_stacks(self.proc.pid)
            self.proc.kill()
            self.proc.wait()
            log = self.log()
            if len(log) > 20000:  # the end tells what it was doing
                log = log[:4000] + "\n[...]\n" + log[-16000:]
            raise AssertionError("vitrine did not stop:\n" + log + "\n" + stacks)
        return self.proc.returncode

    def kill(self):
        contract_rec.server_stopping(self, timeout=2)
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def read_reply(sock, buf=b"", piece=65536):
    """One response with a Content-Length read from sock in recv()s of at most
    `piece` bytes, after `buf` (bytes already read): (head, body, rest)."""
    while b"\r\n\r\n" not in buf:
        b = sock.recv(piece)
        assert b, "connection closed early"
        buf += b
    head, _, buf = buf.partition(b"\r\n\r\n")
    n = int(re.search(rb"(?i)\r\ncontent-length: (\d+)", head).group(1))
    while len(buf) < n:
        b = sock.recv(piece)
        assert b, "connection closed early"
        buf += b
    return head, buf[:n], buf[n:]


def thread_stacks(pid):
    """Every thread's stack of a live process (gdb), to say where it hangs."""
    try:
        out = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx",
                              "-ex", "thread apply all bt 30"],
                             capture_output=True, text=True, timeout=60)
        return "thread stacks (gdb):\n" + out.stdout[-30000:]
    except (OSError, subprocess.SubprocessError) as e:
        return f"(no thread stacks: {e})"


SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "Segmentation fault", "SUMMARY: UndefinedBehaviorSanitizer")


def stop_checked(server):
    """Stops a server a module fixture owns; fails the module when it did not
    exit cleanly or its log has a sanitizer's report."""
    rc = server.stop()
    log = server.log()
    for marker in SANITIZER_MARKERS:
        assert marker not in log, log[-8000:]
    assert rc == 0, log[-4000:]


class BuildGate:
    """Holds a dataset's builds in "building" for as long as a test needs:
    the server's test-only --test-build-gate DIR (src/catalog/catalog.h,
    cat_test_build_gate) makes a build wait while DIR/<dataset> exists. A
    test sees a rebuild in progress with a tiny table, on any machine load,
    instead of a table big enough to take seconds to build."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)

    def hold(self, name):
        (self.dir / name).touch()

    def release(self, name):
        (self.dir / name).unlink(missing_ok=True)


@pytest.fixture
def build_gate(tmp_path):
    return BuildGate(tmp_path / "build-gate")


@pytest.fixture
def vt(tmp_path):
    servers = []

    def start(config_text, env=None, args=None, wait="ready", workdir=None, timeout=60,
              gate=None):
        d = Path(workdir) if workdir else tmp_path / f"srv{len(servers)}"
        d.mkdir(parents=True, exist_ok=True)
        if gate is not None:
            args = (args if args is not None else ["--config", str(d / "datasets.toml")]) + \
                ["--test-build-gate", str(gate.dir)]
        s = Server(d, config_text, env=env, args=args)
        servers.append(s)
        s.start()
        if wait == "ready":
            s.wait_ready(timeout=timeout)
        return s

    yield start
    problems = []
    for s in servers:
        rc = s.stop()
        log = s.log()
        for marker in SANITIZER_MARKERS:
            if marker in log:
                problems.append(f"{marker} in server log:\n{log[-8000:]}")
        if rc not in (0, None, -9) and not getattr(s, "expect_failure", False):
            problems.append(f"server exited with {rc}:\n{log[-4000:]}")
    if problems:
        pytest.fail("\n\n".join(problems))


@pytest.fixture
def datadir(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    return d


def dataset_block(name, location, **extra):
    """A [[dataset]] TOML block for a local parquet source."""
    lines = ["[[dataset]]", f'name = "{name}"', 'source.kind = "parquet"',
             f'source.location = "{location}"']
    for k, v in extra.items():
        if isinstance(v, bool):
            lines.append(f"{k} = {'true' if v else 'false'}")
        elif isinstance(v, (int, float)):
            lines.append(f"{k} = {v}")
        elif isinstance(v, list):
            lines.append(f"{k} = {json.dumps(v)}")
        else:
            lines.append(f'{k} = "{v}"')
    return "\n".join(lines) + "\n"


def server_block(**kw):
    """The [server] table; list values (allowed_roots, allowed_s3_endpoints, ...)
    become TOML arrays of strings."""
    lines = ["[server]", 'listen = "127.0.0.1"', "port = 0"]
    for k, v in kw.items():
        if isinstance(v, bool):
            lines.append(f"{k} = {'true' if v else 'false'}")
        elif isinstance(v, (int, float)):
            lines.append(f"{k} = {v}")
        elif isinstance(v, (list, tuple)):
            lines.append(f"{k} = {json.dumps([str(x) for x in v])}")
        else:
            lines.append(f'{k} = "{v}"')
    return "\n".join(lines) + "\n"
