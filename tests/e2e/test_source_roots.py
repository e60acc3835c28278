"""Source roots that follow the config (issue 21 item 3), regressions of the
confinement work:

- POST /api/v1/config/reload must build a new [[dataset]] in a directory not
  known at startup (DuckDB's allowed directories are frozen by
  enable_external_access = false): resident and lazy, while /sql still reads
  nothing outside the roots;
- POST /api/v1/datasets must accept a file in the same directory as a
  config-file dataset (the default roots include the directories of the
  config file's own datasets), and after a config reload in the new
  dataset's directory too;
- a location the config file names through a symbolic link (`../shared/...`
  where `shared` is a link) must work as its real path does, Delta tables
  included.
"""
import os

from conftest import dataset_block, server_block, write_parquet

TOKEN = "s3cret-token"
ADMIN = {"X-Admin-Token": TOKEN}


def register(s, name, location, **extra):
    body = {"name": name, "source": {"kind": extra.pop("kind", "parquet"),
                                     "location": str(location)}}
    body.update(extra)
    return s.post("/api/v1/datasets", body, headers=ADMIN, timeout=60)


def count(s, name):
    r = s.post(f"/api/v1/datasets/{name}/count", {})
    assert r.status_code == 200, r.text
    return r.json()["count"]


def test_config_reload_builds_datasets_in_new_directories(vt, tmp_path):
    conf = tmp_path / "conf"
    write_parquet(conf / "a.parquet", "SELECT range AS id FROM range(3)")
    s = vt(server_block() + "[sql]\nenabled = true\n" + dataset_block("a", conf / "a.parquet"),
           env={"ADMIN_TOKEN": TOKEN}, workdir=conf)
    # Directories that did not exist when the server started.
    new = tmp_path / "later" / "data"
    write_parquet(new / "b.parquet", "SELECT range AS id FROM range(7)")
    write_parquet(new / "parts" / "p1.parquet", "SELECT range AS id FROM range(4)")
    write_parquet(new / "parts" / "p2.parquet", "SELECT range AS id FROM range(5)")
    lazy_dir = tmp_path / "later2"
    write_parquet(lazy_dir / "c.parquet", "SELECT range AS id FROM range(11)")
    with open(s.config_path, "a") as f:
        f.write(dataset_block("b", new / "b.parquet"))
        f.write(dataset_block("parts", f"{new}/parts/*.parquet"))
        f.write(dataset_block("c", lazy_dir / "c.parquet", lazy=True))
    r = s.post("/api/v1/config/reload", headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json() == {"registered": ["b", "parts", "c"], "skipped": ["a"], "errors": []}, r.text
    assert (count(s, "b"), count(s, "parts"), count(s, "c")) == (7, 9, 11)
    # Reloading them (a second build) works as well.
    assert s.post("/api/v1/datasets/b/reload", headers=ADMIN).status_code == 200
    assert count(s, "b") == 7
    # The new directory is a root now: a registration next to it is accepted.
    write_parquet(new / "d.parquet", "SELECT range AS id FROM range(2)")
    r = register(s, "d", new / "d.parquet")
    assert r.status_code in (200, 201, 202), r.text
    assert s.wait_state("d", ["published"])["rows"] == 2
    # Confinement stays: /sql reads datasets only, and neither the new
    # directory nor anything else is readable through it.
    secret = tmp_path / "outside" / "secret.parquet"
    write_parquet(secret, "SELECT 42 AS s")
    for q in (f"SELECT * FROM read_parquet('{secret}')",
              f"SELECT * FROM read_parquet('{new}/b.parquet')",
              "SELECT * FROM read_csv('/etc/passwd')"):
        r = s.post("/api/v1/sql", {"sql": q})
        assert r.status_code == 400, (q, r.text)
    r = s.post("/api/v1/sql", {"sql": "SELECT count(*) AS n FROM b"})
    assert r.status_code == 200 and r.json()["data"] == [{"n": 7}]
    # Outside every root a registration is still refused.
    r = register(s, "nope", secret)
    assert r.status_code == 400 and r.json()["code"] == "source_not_allowed"


def test_registration_next_to_a_config_dataset(vt, tmp_path):
    """The config lives in one directory, its dataset in another: a file
    beside that dataset may be registered (no allowed_roots set)."""
    data = tmp_path / "warehouse"
    write_parquet(data / "one.parquet", "SELECT range AS id FROM range(3)")
    write_parquet(data / "two.parquet", "SELECT range AS id FROM range(4)")
    write_parquet(data / "sub" / "three.parquet", "SELECT range AS id FROM range(5)")
    s = vt(server_block() + dataset_block("one", data / "one.parquet"),
           env={"ADMIN_TOKEN": TOKEN}, workdir=tmp_path / "conf")
    for name, loc, rows in (("two", data / "two.parquet", 4),
                            ("three", data / "sub" / "three.parquet", 5)):
        r = register(s, name, loc)
        assert r.status_code in (200, 201, 202), r.text
        assert s.wait_state(name, ["published"])["rows"] == rows
    r = register(s, "up", tmp_path / "elsewhere.parquet")
    assert r.status_code == 400 and r.json()["code"] == "source_not_allowed"


def test_locations_through_symbolic_links(vt, tmp_path):
    """`../shared/...` where shared is a link: as good as its real path."""
    real = tmp_path / "real-shared"
    write_parquet(real / "t.parquet", "SELECT range AS id FROM range(6)")
    write_parquet(real / "glob" / "g1.parquet", "SELECT range AS id FROM range(2)")
    write_parquet(real / "glob" / "g2.parquet", "SELECT range AS id FROM range(3)")
    work = tmp_path / "work"
    (work / "repo").mkdir(parents=True)
    os.symlink(real, work / "shared")
    corpus = delta_corpus()
    if corpus:
        os.symlink(corpus, real / "delta-tables")
    cfg = (server_block()
           + dataset_block("t", "../shared/t.parquet")
           + dataset_block("g", "../shared/glob/*.parquet")
           + dataset_block("gl", "../shared/glob", lazy=True)
           + dataset_block("abs", work / "shared" / "t.parquet"))
    if corpus:
        cfg += dataset_block("dl", "../shared/delta-tables/simple_table").replace(
            'source.kind = "parquet"', 'source.kind = "delta"')
    s = vt(cfg, env={"ADMIN_TOKEN": TOKEN}, workdir=work / "repo")
    assert (count(s, "t"), count(s, "g"), count(s, "gl"), count(s, "abs")) == (6, 5, 5, 6)
    if corpus:
        assert count(s, "dl") > 0
    # And a registration beside it, through the link as well.
    r = register(s, "t2", work / "shared" / "glob" / "g1.parquet")
    assert r.status_code in (200, 201, 202), r.text
    assert s.wait_state("t2", ["published"])["rows"] == 2


def delta_corpus():
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    for cand in (os.environ.get("VT_DELTA_CORPUS"), repo.parent / "shared" / "delta-tables",
                 Path("/work/shared/delta-tables")):
        if cand and (Path(cand) / "simple_table").is_dir():
            return Path(cand).resolve()
    return None
