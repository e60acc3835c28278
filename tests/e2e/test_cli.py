"""The command line: --version, --help, init, check-config, config resolution."""
import os
import subprocess

from conftest import VITRINE, Server, server_block


def run(*args, cwd=None, env=None, timeout=60):
    e = dict(os.environ)
    e.pop("VITRINE_CONFIG_FILE", None)
    if env:
        e.update(env)
    return subprocess.run([str(VITRINE), *args], capture_output=True, text=True, cwd=cwd, env=e,
                          timeout=timeout)


def test_version_and_help():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("vitrine ")
    assert "DuckDB" in r.stdout
    r = run("--help")
    assert r.returncode == 0 and "check-config" in r.stdout and "init" in r.stdout
    # every environment variable the README tells people to set is named
    for var in ("ADMIN_TOKEN", "VITRINE_CONFIG_FILE", "VITRINE_LOG ", "VITRINE_LOG_FORMAT"):
        assert var in r.stdout, var
    # The test-only build gate is no option anyone is offered.
    assert "test" not in r.stdout.replace("datasets.toml", "")


def test_unknown_argument_exits_2():
    r = run("--frobnicate")
    assert r.returncode == 2 and "unknown argument" in r.stderr
    r = run("--test-build-gate")
    assert r.returncode == 2 and "needs a directory" in r.stderr


def test_init_writes_a_template_that_validates(tmp_path):
    r = run("init", str(tmp_path / "new"))
    assert r.returncode == 0, r.stderr
    path = tmp_path / "new" / "datasets.toml"
    text = path.read_text()
    for block in ("[server]", "[swagger]", "[metrics]", "[auth]", "[sql]", "[mcp]", "[[dataset]]"):
        assert block in text
    r = run("check-config", str(path))
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout
    # init refuses to overwrite
    r = run("init", str(tmp_path / "new"))
    assert r.returncode != 0


def test_check_config_names_file_line_and_key(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('[server]\nlisten = "127.0.0.1"\nprot = 8080\n')
    r = run("check-config", str(p))
    assert r.returncode == 1
    assert "bad.toml:3" in r.stderr and "server.prot" in r.stderr and "port" in r.stderr
    p.write_text('[server]\nport = "eighty"\n')
    r = run("check-config", str(p))
    assert r.returncode == 1 and "bad.toml:2" in r.stderr and "server.port" in r.stderr
    p.write_text('[server]\nprefix = "/api/"\n')
    r = run("check-config", str(p))
    assert r.returncode == 1 and "server.prefix" in r.stderr
    p.write_text('[[dataset]]\nname = "reload-all"\nsource.kind = "parquet"\nsource.location = "x"\n')
    r = run("check-config", str(p))
    assert r.returncode == 1 and "reload-all" in r.stderr
    p.write_text('[[dataset]]\nname = "bad name"\nsource.kind = "parquet"\nsource.location = "x"\n')
    r = run("check-config", str(p))
    assert r.returncode == 1 and "name" in r.stderr
    p.write_text('[[dataset]]\nname = "a"\nsource.kind = "parquet"\nsource.location = "x"\n'
                 '[[dataset]]\nname = "a"\nsource.kind = "parquet"\nsource.location = "y"\n')
    r = run("check-config", str(p))
    assert r.returncode == 1 and "duplicate" in r.stderr.lower()
    p.write_text('a = = 1\n')
    r = run("check-config", str(p))
    assert r.returncode == 1 and "bad.toml" in r.stderr and "line 1" in r.stderr


def test_config_resolution_env_then_cwd(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "datasets.toml").write_text(server_block(prefix="/from-env"))
    (b / "datasets.toml").write_text(server_block(prefix="/from-cwd"))
    s = Server(b, (b / "datasets.toml").read_text(), args=[],
               env={"VITRINE_CONFIG_FILE": str(a / "datasets.toml")})
    s.start()
    try:
        s.prefix = "/from-env"
        assert s.get("/healthz").status_code == 200
    finally:
        assert s.stop() == 0
    s = Server(b, (b / "datasets.toml").read_text(), args=[])
    s.env.pop("VITRINE_CONFIG_FILE", None)
    s.start()
    try:
        s.prefix = "/from-cwd"
        assert s.get("/healthz").status_code == 200
    finally:
        assert s.stop() == 0


def test_port_in_use_exits_nonzero(vt, tmp_path):
    # A second server on a port already served must fail to start, not share
    # the port (SO_REUSEPORT would let it take some of the connections).
    first = vt(server_block())
    p = tmp_path / "second.toml"
    p.write_text(server_block().replace("port = 0", f"port = {first.port}"))
    try:
        r = run("--config", str(p), timeout=10)
    except subprocess.TimeoutExpired:
        raise AssertionError("a second server started on the same port")
    assert r.returncode == 1 and "cannot listen" in r.stderr
    assert first.get("/healthz").status_code == 200


def test_bad_config_exits_nonzero(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[server]\nport = 99999\n")
    r = run("--config", str(p))
    assert r.returncode == 1 and "server.port" in r.stderr


def test_misspelt_log_settings_are_said(tmp_path):
    """VITRINE_LOG=verbose or VITRINE_LOG_FORMAT=xml were silently the
    defaults: whoever set them waited for lines that never came. Each is a
    warning naming the values it takes; the right ones warn about nothing."""
    cfg = tmp_path / "datasets.toml"
    cfg.write_text(server_block())
    r = run("check-config", str(cfg), env={"VITRINE_LOG": "verbose", "VITRINE_LOG_FORMAT": "xml"})
    assert r.returncode == 0, r.stderr
    assert "VITRINE_LOG=verbose is not a level (error, warn, info or debug)" in r.stderr, r.stderr
    assert "VITRINE_LOG_FORMAT=xml is not a format (json or text)" in r.stderr, r.stderr
    for env in ({"VITRINE_LOG": "debug", "VITRINE_LOG_FORMAT": "json"},
                {"VITRINE_LOG": "WARN", "VITRINE_LOG_FORMAT": "text"}):
        r = run("check-config", str(cfg), env=env)
        assert r.returncode == 0 and "VITRINE_LOG" not in r.stderr, (env, r.stderr)


def test_check_config_warns_about_locations_that_do_not_exist(tmp_path):
    """A mistyped location is valid (the server starts and skips that
    dataset), so check-config still says ok and exits 0, but it names the
    dataset and the path that is not there; it said "ok" alone before.
    Locations that exist, globs whose directory exists and S3 URLs are
    not warned about."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "trips.parquet").write_bytes(b"")
    p = tmp_path / "datasets.toml"
    blocks = [("ok", "data/trips.parquet"), ("glob", "data/*.parquet"), ("dir", "data"),
              ("s3", "s3://bucket/t/*.parquet"), ("typo", "data/trip.parquet"),
              ("nodir", "missing/*.parquet")]
    p.write_text("".join(f'[[dataset]]\nname = "{n}"\nsource.kind = "parquet"\n'
                         f'source.location = "{loc}"\n' for n, loc in blocks))
    r = run("check-config", str(p))
    assert r.returncode == 0 and "ok (6 datasets)" in r.stdout, r
    warned = [line for line in r.stderr.splitlines() if "warning" in line]
    assert warned == [
        f"{p}: warning: dataset typo: {tmp_path / 'data' / 'trip.parquet'} does not exist "
        "(the server would skip this dataset)",
        f"{p}: warning: dataset nodir: {tmp_path / 'missing'} does not exist "
        "(the server would skip this dataset)"], r.stderr
