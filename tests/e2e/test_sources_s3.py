"""S3 sources against a real S3 server (moto) through build/vt-source, which
resolves a source exactly as a dataset build does and prints its rows.

Covered: parquet prefixes, single objects, globs, hive layouts, pagination
(over 1000 keys), Delta tables from the shared corpus uploaded to S3 (resident
and lazy), the lazy object cache (reuse, revalidation by ETag, eviction), and
faults: 500/503/429 with retries, dropped connections, redirects, a key deleted
between list and get, wrong credentials (403 -> access denied), plain-http
refusal. Results from S3 must equal the same data read from local files.
"""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import delta_corpus
from s3_fixtures import Fault, FaultProxy, moto, moto_auth, proxy  # noqa: F401 (fixtures)

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VITRINE_BUILD", REPO / "build"))
VTSOURCE = BUILD / "vt-source"
VTSQL = BUILD / "vt-sql"


def corpus_dir():
    return delta_corpus()


def vtsql(*statements):
    out = subprocess.run([str(VTSQL), *statements], check=True, capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def write_parquet(path, select):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    vtsql(f"COPY ({select}) TO '{path}' (FORMAT parquet)")
    return path


def local_rows(select):
    """Rows of a SELECT over local files, formatted like vt-source's output."""
    return sorted(r[0] for r in vtsql("SET TimeZone = 'UTC'",
                                      f"SELECT to_json(t)::VARCHAR AS j FROM ({select}) t"))


class Result:
    def __init__(self, proc):
        self.proc = proc
        lines = proc.stdout.splitlines()
        if not lines:
            raise AssertionError(f"vt-source printed nothing; stderr:\n{proc.stderr}")
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            assert marker not in proc.stderr, f"sanitizer report from vt-source:\n{proc.stderr}"
        self.meta = json.loads(lines[0])
        self.rows = lines[1:]
        self.ok = self.meta.get("ok")

    def __repr__(self):
        return f"Result({self.meta}, {len(self.rows)} rows, stderr={self.proc.stderr[-2000:]!r})"


def run_source(location, *args, endpoint=None, env=None, creds=("testing", "testing")):
    e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    e.setdefault("VITRINE_LOG", "warn")
    if creds:
        e["AWS_ACCESS_KEY_ID"], e["AWS_SECRET_ACCESS_KEY"] = creds
    if env:
        e.update(env)
    cmd = [str(VTSOURCE)]
    if endpoint:
        cmd += ["--s3-endpoint", endpoint, "--path-style", "--allow-http", "--s3-region",
                "us-east-1"]
    cmd += [*args, location]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=600)
    return Result(proc)


_bucket_seq = [0]


def new_bucket(moto):
    _bucket_seq[0] += 1
    name = f"vt-test-{os.getpid()}-{_bucket_seq[0]}"
    moto.create_bucket(name)
    return name


# ---- parquet ----------------------------------------------------------------

@pytest.fixture
def parquet_set(tmp_path, moto):
    """Three parquet files (one with an extra column) uploaded under data/,
    with files the directory form must skip."""
    b = new_bucket(moto)
    f1 = write_parquet(tmp_path / "f1.parquet",
                       "SELECT range AS id, 'a' || range AS s FROM range(0, 50)")
    f2 = write_parquet(tmp_path / "f2.parquet",
                       "SELECT range AS id, 'b' || range AS s, range * 1.5 AS x FROM range(50, 80)")
    f3 = write_parquet(tmp_path / "f3.parquet",
                       "SELECT range AS id, NULL::VARCHAR AS s FROM range(80, 81)")
    moto.upload_file(b, "data/f1.parquet", f1)
    moto.upload_file(b, "data/sub dir/f2.parquet", f2)
    moto.upload_file(b, "data/f3.parquet", f3)
    moto.put(b, "data/_SUCCESS", b"")
    moto.put(b, "data/readme.txt", b"not parquet")
    moto.upload_file(b, "data/_temporary/0/f9.parquet", f1)   # hidden: skipped
    moto.upload_file(b, "data2/other.parquet", f1)             # sibling prefix: not under data/
    return b, [f1, f2, f3]


def union(files):
    lst = ", ".join(f"'{f}'" for f in files)
    return f"SELECT * FROM read_parquet([{lst}], union_by_name = true)"


def test_parquet_prefix_equals_local(moto, parquet_set):
    b, files = parquet_set
    want = local_rows(union(files))
    for loc in (f"s3://{b}/data/", f"s3://{b}/data"):
        r = run_source(loc, "--kind", "parquet", endpoint=moto.endpoint)
        assert r.ok, r
        assert r.meta["files"] == 3
        assert r.rows == want
        assert r.meta["total_bytes"] == sum(f.stat().st_size for f in files)
        assert r.meta["temp_files"] == 3  # resident: downloads to delete after the build


def test_parquet_single_object_and_globs(moto, parquet_set):
    b, files = parquet_set
    r = run_source(f"s3://{b}/data/f1.parquet", endpoint=moto.endpoint)
    assert r.ok, r
    assert r.rows == local_rows(union(files[:1]))
    r = run_source(f"s3://{b}/data/f[13].parquet", endpoint=moto.endpoint)
    assert r.ok, r
    assert r.rows == local_rows(union([files[0], files[2]]))
    r = run_source(f"s3://{b}/data/*.parquet", endpoint=moto.endpoint)
    assert r.ok and r.meta["files"] == 2, r
    r = run_source(f"s3://{b}/data/**/*.parquet", endpoint=moto.endpoint)
    assert r.ok, r
    assert r.meta["files"] == 4  # globs skip nothing: _temporary/ matches too
    r = run_source(f"s3://{b}/nothing/*.parquet", endpoint=moto.endpoint)
    assert not r.ok and r.meta["code"] == "source_empty", r


def test_parquet_projection(moto, parquet_set):
    b, files = parquet_set
    r = run_source(f"s3://{b}/data/", "--kind", "parquet", "--columns", "x,id",
                   endpoint=moto.endpoint)
    assert r.ok, r
    assert [c[0] for c in r.meta["columns"]] == ["x", "id"]
    r = run_source(f"s3://{b}/data/", "--kind", "parquet", "--columns", "nope",
                   endpoint=moto.endpoint)
    assert not r.ok and "nope" in r.meta["error"]


def test_hive_layout_typed_partitions(moto, tmp_path):
    b = new_bucket(moto)
    layout = {
        "year=2023/city=Paris/p.parquet": (2023, "Paris"),
        "year=2024/city=New%20York/p.parquet": (2024, "New York"),
        "year=2024/city=__HIVE_DEFAULT_PARTITION__/p.parquet": (2024, None),
    }
    parts = []
    for i, (key, (year, city)) in enumerate(layout.items()):
        f = write_parquet(tmp_path / f"h{i}.parquet", f"SELECT {i} AS id, 'v{i}' AS v")
        moto.upload_file(b, "hive/" + key, f)
        city_sql = "NULL::VARCHAR" if city is None else f"'{city}'"
        parts.append(f"SELECT *, {year}::BIGINT AS year, {city_sql} AS city "
                     f"FROM read_parquet('{f}')")
    want = local_rows(" UNION ALL ".join(parts))
    for mode in ("auto", "hive"):
        r = run_source(f"s3://{b}/hive/", "--kind", "parquet", "--partitioning", mode,
                       endpoint=moto.endpoint)
        assert r.ok, r
        assert r.meta["columns"] == [["id", "INTEGER"], ["v", "VARCHAR"], ["year", "BIGINT"],
                                     ["city", "VARCHAR"]]
        assert r.rows == want
    r = run_source(f"s3://{b}/hive/", "--kind", "parquet", "--partitioning", "none",
                   endpoint=moto.endpoint)
    assert r.ok and [c[0] for c in r.meta["columns"]] == ["id", "v"], r
    # Inconsistent key=value directories: hive refuses, auto falls back to none.
    moto.upload_file(b, "hive/loose.parquet", tmp_path / "h0.parquet")
    r = run_source(f"s3://{b}/hive/", "--kind", "parquet", "--partitioning", "hive",
                   endpoint=moto.endpoint)
    assert not r.ok and "key=value" in r.meta["error"], r
    r = run_source(f"s3://{b}/hive/", "--kind", "parquet", "--partitioning", "auto",
                   endpoint=moto.endpoint)
    assert r.ok and [c[0] for c in r.meta["columns"]] == ["id", "v"], r


def test_pagination_over_1000_keys(moto, proxy, tmp_path):
    b = new_bucket(moto)
    f = write_parquet(tmp_path / "one.parquet", "SELECT 7 AS v")
    data = f.read_bytes()
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: moto.put(b, f"many/part-{i:05d}.parquet", data), range(1003)))
    r = run_source(f"s3://{b}/many/", "--kind", "parquet", endpoint=proxy.endpoint)
    assert r.ok, r
    assert r.meta["files"] == 1003
    assert r.rows == ['{"v":7}'] * 1003
    lists = proxy.requests("GET", query="list-type=2")
    assert len(lists) == 2 and "continuation-token=" in lists[1][2]
    # A small page size (test hook) pages many times with continuation tokens
    # (a smaller prefix: the pages are what is checked, not 1,003 more reads).
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: moto.put(b, f"few/part-{i:05d}.parquet", data), range(203)))
    proxy.reset()
    r = run_source(f"s3://{b}/few/", "--kind", "parquet", "--lazy", "--cache-dir",
                   str(tmp_path / "cache"), endpoint=proxy.endpoint,
                   env={"VITRINE_S3_LIST_PAGE_SIZE": "20"})
    assert r.ok and r.meta["files"] == 203, r
    assert len(proxy.requests("GET", query="list-type=2")) == 11


# ---- Delta on S3 ---------------------------------------------------------------

DELTA_TABLES = ["delta-0.8.0-special-partition", "delta-0.8.0-null-partition",
                "checkpoint-v2-table", "simple_table_with_checkpoint",
                "table_failed_last_checkpoint_update", "table_with_column_mapping", "cdf-table",
                "table_with_edge_timestamps", "delta-1.2.1-only-struct-stats", "COVID-19_NYT"]


@pytest.fixture(scope="module")
def delta_bucket(moto):
    corpus = corpus_dir()
    if not corpus:
        pytest.fail("Delta corpus not found (expected ../shared/delta-tables)")
    b = new_bucket(moto)
    for t in DELTA_TABLES + ["delta-0.8-empty", "simple_table_features"]:
        moto.upload_tree(corpus / t, b, f"tables/{t}")
    return b, corpus


@pytest.mark.parametrize("table", DELTA_TABLES)
def test_delta_on_s3_equals_local(moto, delta_bucket, table, tmp_path):
    b, corpus = delta_bucket
    local = run_source(str(corpus / table))
    assert local.ok, local
    resident = run_source(f"s3://{b}/tables/{table}", "--temp-dir", str(tmp_path),
                          endpoint=moto.endpoint)
    assert resident.ok, resident
    assert resident.rows == local.rows
    assert resident.meta["columns"] == local.meta["columns"]
    assert resident.meta["version"] == local.meta["version"]
    assert resident.meta["total_bytes"] == local.meta["total_bytes"]
    assert list(tmp_path.iterdir()) == []  # checkpoint downloads and data temp files removed
    lazy = run_source(f"s3://{b}/tables/{table}/", "--lazy", "--cache-dir",
                      str(tmp_path / "cache"), endpoint=moto.endpoint)
    assert lazy.ok, lazy
    assert lazy.rows == local.rows
    assert lazy.meta["temp_files"] == 0


def test_delta_on_s3_empty_and_unsupported(moto, delta_bucket):
    b, _ = delta_bucket
    r = run_source(f"s3://{b}/tables/delta-0.8-empty", endpoint=moto.endpoint)
    assert not r.ok and r.meta["code"] == "source_empty", r
    r = run_source(f"s3://{b}/tables/no-such-table", endpoint=moto.endpoint)
    assert not r.ok and r.meta["code"] == "source_empty", r
    r = run_source(f"s3://{b}/tables/simple_table_features", endpoint=moto.endpoint)
    assert not r.ok and r.meta["code"] == "source_unsupported", r
    assert "blahabl" in r.meta["error"] and "deletionVectors" not in r.meta["error"]


def test_delta_new_commit_on_s3(moto, tmp_path):
    """A commit uploaded after a first resolve is seen by the next one."""
    b = new_bucket(moto)
    f1 = write_parquet(tmp_path / "a.parquet", "SELECT 1::BIGINT AS id")
    f2 = write_parquet(tmp_path / "b.parquet", "SELECT 2::BIGINT AS id")
    schema = json.dumps({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
    c0 = "\n".join(json.dumps(x) for x in [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                      "schemaString": schema, "partitionColumns": [], "configuration": {}}},
        {"add": {"path": "a.parquet", "partitionValues": {}, "size": f1.stat().st_size,
                 "modificationTime": 0, "dataChange": True}}]) + "\n"
    moto.upload_file(b, "t/a.parquet", f1)
    moto.put(b, "t/_delta_log/00000000000000000000.json", c0.encode())
    r = run_source(f"s3://{b}/t", "--lazy", "--cache-dir", str(tmp_path / "c"),
                   endpoint=moto.endpoint)
    assert r.ok and r.rows == ['{"id":1}'] and r.meta["version"] == "0", r
    moto.upload_file(b, "t/b.parquet", f2)
    c1 = json.dumps({"add": {"path": "b.parquet", "partitionValues": {},
                             "size": f2.stat().st_size, "modificationTime": 0,
                             "dataChange": True}}) + "\n"
    moto.put(b, "t/_delta_log/00000000000000000001.json", c1.encode())
    r = run_source(f"s3://{b}/t", "--lazy", "--cache-dir", str(tmp_path / "c"),
                   endpoint=moto.endpoint)
    assert r.ok and r.rows == ['{"id":1}', '{"id":2}'] and r.meta["version"] == "1", r


# ---- lazy datasets: byte ranges through the range cache (issue 17) -----------------

def lazy_server(vt, tmp_path, moto, endpoint, bucket, extra_server=None, extra_toml="",
                **lazy_extra):
    """A server with "lz" (lazy, through `endpoint`) and "ref" (resident, moto
    directly) over the same objects."""
    from conftest import server_block
    blk = lambda name, ep, lazy: "\n".join([
        "[[dataset]]", f'name = "{name}"', 'source.kind = "parquet"',
        f'source.location = "s3://{bucket}/part/"', f's3.endpoint = "{ep}"',
        's3.addressing_style = "path"', "s3.allow_http = true", 's3.region = "us-east-1"',
        "lazy = true" if lazy else ""]) + "\n"
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "TMPDIR": str(tmp_path / "tmp"), "ADMIN_TOKEN": "tok"}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    srv = vt(server_block(**(extra_server or {})) + extra_toml + blk("lz", endpoint, True)
             + blk("ref", moto.endpoint, False), env=env, wait="listening")
    for name in ("lz", "ref"):
        st = srv.wait_state(name, ["published", "failed"], timeout=120)
        assert st["state"] == "published", (name, st, srv.log()[-3000:])
    return srv


def write_days(moto, tmp_path, bucket, days, rows=5000):
    sizes = {}
    for d in days:
        f = write_parquet(tmp_path / f"d{d}.parquet",
                          f"SELECT range + {d} * 100000 AS id, md5(range::VARCHAR) AS v, "
                          f"range * 0.5 AS x FROM range({rows})")
        # Several row groups per file, so ranges are more than whole files.
        vtsql(f"COPY (SELECT * FROM read_parquet('{f}')) TO '{f}.rg' "
              f"(FORMAT parquet, ROW_GROUP_SIZE 1000)")
        key = f"part/day=2024-01-0{d}/f.parquet"
        moto.upload_file(bucket, key, Path(str(f) + ".rg"))
        sizes[key] = Path(str(f) + ".rg").stat().st_size
    return sizes


def object_gets(proxy, bucket):
    return [r for r in proxy.requests("GET") if "list-type" not in r[2]
            and r[1].startswith(f"/{bucket}/part/")]


def post(srv, name, path, body):
    r = srv.post(f"/api/v1/datasets/{name}/{path}", body, timeout=60)
    return r.status_code, r.json()


def test_lazy_reads_byte_ranges_and_detects_rewrites(vt, moto, proxy, tmp_path):
    b = new_bucket(moto)
    sizes = write_days(moto, tmp_path, b, [1, 2, 3])
    srv = lazy_server(vt, tmp_path, moto, proxy.endpoint, b)
    # Publishing read footers (and one row group for the sample), in ranges.
    gets = object_gets(proxy, b)
    assert gets and all(g[4] and g[4].startswith("bytes=") for g in gets), gets
    assert sum(g[5] for g in gets) < 0.6 * sum(sizes.values()), (gets, sizes)
    proxy.reset()
    # A count without predicates: from the footers, nothing fetched.
    assert post(srv, "lz", "count", {}) == post(srv, "ref", "count", {}) == (200, {"count": 15000})
    assert object_gets(proxy, b) == []
    # A page of one partition: only that object, only what the page reads.
    q = {"predicates": [{"col": "day", "op": "eq", "val": "2024-01-02"}], "columns": ["id"],
         "order_by": [{"col": "id"}], "page_size": 10}
    assert post(srv, "lz", "query", q) == post(srv, "ref", "query", q)
    gets = object_gets(proxy, b)
    assert gets and {g[1] for g in gets} == {f"/{b}/part/day=2024-01-02/f.parquet"}, gets
    assert all(g[4] for g in gets)
    assert sum(g[5] for g in gets) < sizes["part/day=2024-01-02/f.parquet"] / 2
    proxy.reset()
    assert post(srv, "lz", "query", q)[0] == 200
    assert object_gets(proxy, b) == []          # cached
    # The object is rewritten under the generation: what is cached still
    # serves the generation's rows; what must be fetched is refused, never mixed.
    newf = write_parquet(tmp_path / "new.parquet",
                         "SELECT range AS id, 'new' AS v, 0.0 AS x FROM range(3)")
    moto.upload_file(b, "part/day=2024-01-02/f.parquet", newf)
    assert post(srv, "lz", "query", q)[0] == 200
    code, body = post(srv, "lz", "query", dict(q, columns=["v"]))
    assert code == 503 and body["code"] == "source_changed", body
    assert "day=2024-01-02" in body["error"]
    q1 = dict(q, predicates=[{"col": "day", "op": "eq", "val": "2024-01-01"}], columns=["v"])
    assert post(srv, "lz", "query", q1)[0] == 200
    # The 503 started a rebuild by itself (issue 21 item 4), so an explicit
    # reload either runs one or finds that one busy; either way the dataset
    # soon serves the new object.
    r = srv.post("/api/v1/datasets/lz/reload", headers={"X-Admin-Token": "tok"}, timeout=120)
    assert r.status_code == 200 or (r.status_code == 409 and r.json()["code"] == "busy"), r.text
    deadline = time.monotonic() + 60
    while True:
        code, body = post(srv, "lz", "query", dict(q, columns=["v"]))
        if code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert code == 200 and [row["v"] for row in body["data"]] == ["new"] * 3, body


def test_saved_query_over_a_lazy_s3_dataset(vt, moto, tmp_path):
    """A query dataset's build reads its lazy S3 upstream whole: the objects
    are made local for it (not only the footers the generation fetched)."""
    b = new_bucket(moto)
    write_days(moto, tmp_path, b, [1, 2, 3])
    srv = lazy_server(vt, tmp_path, moto, moto.endpoint, b)
    r = srv.post("/api/v1/queries", {"name": "per_day", "sql":
                 "SELECT day, count(*) AS n, sum(id) AS s, min(v) AS v FROM lz GROUP BY day"},
                 headers={"X-Admin-Token": "tok"}, timeout=120)
    assert r.status_code == 200 and r.json()["state"] == "published", r.text
    code, got = post(srv, "per_day", "query", {"order_by": [{"col": "day"}]})
    assert code == 200, got
    code, want = post(srv, "ref", "query", {
        "group_by": ["day"], "aggregations": [{"op": "count"}, {"op": "sum", "col": "id"},
                                              {"op": "min", "col": "v"}],
        "order_by": [{"col": "day"}]})
    assert code == 200, want
    assert [(x["day"], x["n"], x["s"], x["v"]) for x in got["data"]] == [
        (x["day"], x["count"], x["sum_id"], x["min_v"]) for x in want["data"]]
    assert len(got["data"]) == 3 and sum(x["n"] for x in got["data"]) == 15000


def test_listing_cache_reuses_s3_listings_within_its_ttl(vt, moto, proxy, tmp_path):
    """[datafusion] list_files_cache: a rebuild within the TTL reuses the
    location's listing (no ListObjectsV2), after it lists again."""
    b = new_bucket(moto)
    write_days(moto, tmp_path, b, [1, 2])
    t_before = time.monotonic()             # the listing is younger than this
    srv = lazy_server(vt, tmp_path, moto, proxy.endpoint, b,
                      extra_toml="[datafusion]\nlist_files_cache = true\n"
                                 "list_files_cache_ttl_secs = 5\n")
    t_after = time.monotonic()              # ... and older than this
    assert post(srv, "lz", "count", {}) == (200, {"count": 10000})
    write_days(moto, tmp_path, b, [3])
    proxy.reset()
    admin = {"X-Admin-Token": "tok"}
    r = srv.post("/api/v1/datasets/lz/reload", headers=admin, timeout=120)
    assert r.status_code == 200, r.text
    t_fresh = t_after                       # the youngest listing is older than this
    within = time.monotonic() - t_before < 4.5
    if within:                              # (a machine so loaded that it took 5 s: skip)
        assert [q for q in proxy.requests("GET") if "list-type" in q[2]] == []
        assert post(srv, "lz", "count", {}) == (200, {"count": 10000})
    else:
        # Past the TTL the reload listed again: that listing is the one the
        # next reload must outlive (waiting from t_after only, the next
        # reload came within its TTL on a loaded machine and listed nothing).
        t_fresh = time.monotonic()
    time.sleep(max(0.0, 5.3 - (time.monotonic() - t_fresh)))
    proxy.reset()
    r = srv.post("/api/v1/datasets/lz/reload", headers=admin, timeout=120)
    assert r.status_code == 200, r.text
    assert [q for q in proxy.requests("GET") if "list-type" in q[2]], proxy.log
    assert post(srv, "lz", "count", {}) == (200, {"count": 15000})


def cache_bytes(tmp_path):
    """Bytes the range cache holds on disk (sparse files: allocated blocks)."""
    return sum(p.stat().st_blocks * 512 for p in (tmp_path / "tmp").rglob("*.vtr"))


def test_lazy_range_cache_stays_within_its_budget(vt, moto, tmp_path):
    b = new_bucket(moto)
    sizes = write_days(moto, tmp_path, b, [1, 2, 3, 4, 5], rows=40000)
    biggest = max(sizes.values())
    assert biggest > 512 * 1024
    srv = lazy_server(vt, tmp_path, moto, moto.endpoint, b, extra_server={"s3_cache_mb": 1},
                      extra_toml="[metrics]\nenabled = true\n")
    budget = 1024 * 1024
    for d in [1, 2, 3, 4, 5, 1, 3]:
        q = {"predicates": [{"col": "day", "op": "eq", "val": f"2024-01-0{d}"}],
             "order_by": [{"col": "id"}], "page_size": 50, "page": 7}
        assert post(srv, "lz", "query", q) == post(srv, "ref", "query", q)
        # What the last query read may stay beyond the budget; nothing else.
        assert cache_bytes(tmp_path) <= budget + biggest + 64 * 1024, cache_bytes(tmp_path)
        # The metrics count the cache and the generation's metadata.
        m = srv.get("/metrics").text
        held = int(re.search(r"^vitrine_s3_range_cache_bytes (\d+)$", m, re.M).group(1))
        assert 0 < held <= budget + biggest + 64 * 1024, held
        meta = re.search(r'^vitrine_dataset_lazy_metadata_bytes\{dataset="lz"\} (\d+)$', m, re.M)
        assert meta and int(meta.group(1)) > 0, m[-2000:]
        assert 'vitrine_dataset_lazy_metadata_bytes{dataset="ref"}' not in m
    files = list((tmp_path / "tmp").rglob("*.vtr"))
    assert len(files) < len(sizes), files  # some objects were evicted


# ---- faults ------------------------------------------------------------------------

def test_retries_on_503_slowdown_500_429_and_dropped_connections(moto, proxy, parquet_set):
    b, files = parquet_set
    want = local_rows(union(files))
    proxy.add(Fault("status", method="GET", query="list-type=2", status=503, code="SlowDown",
                    times=2))
    proxy.add(Fault("status", method="GET", path="data/f1.parquet", status=500,
                    code="InternalError", times=1))
    proxy.add(Fault("status", method="GET", path="data/f3.parquet", status=429,
                    code="TooManyRequests", times=1, retry_after=1))
    proxy.add(Fault("drop", method="GET", path="sub dir/f2.parquet", times=1))
    t0 = time.time()
    r = run_source(f"s3://{b}/data/", "--kind", "parquet", endpoint=proxy.endpoint)
    assert r.ok, r
    assert r.rows == want
    assert all(f.times == 0 for f in proxy.faults)
    assert len(proxy.requests("GET", query="list-type=2")) == 3
    assert len(proxy.requests("GET", path="data/f1.parquet")) == 2
    assert time.time() - t0 < 60


def test_persistent_500_gives_up_after_bounded_attempts(moto, proxy, parquet_set):
    b, _ = parquet_set
    proxy.add(Fault("status", method="GET", query="list-type=2", status=500,
                    code="InternalError", times=1000))
    r = run_source(f"s3://{b}/data/", "--kind", "parquet", endpoint=proxy.endpoint)
    assert not r.ok and r.meta["code"] == "source_unavailable", r
    assert "500" in r.meta["error"]
    assert not r.meta["access_denied"]
    # The proxy logs a request after answering it: give the last entry a moment.
    deadline = time.time() + 5
    while len(proxy.requests("GET", query="list-type=2")) < 5 and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    assert len(proxy.requests("GET", query="list-type=2")) == 5  # VT_S3_MAX_ATTEMPTS


def test_key_deleted_between_list_and_get(moto, proxy, parquet_set, tmp_path):
    b, _ = parquet_set
    proxy.add(Fault("after", method="GET", query="list-type=2",
                    then=lambda: moto.delete(b, "data/f3.parquet")))
    r = run_source(f"s3://{b}/data/", "--kind", "parquet", "--temp-dir", str(tmp_path),
                   endpoint=proxy.endpoint)
    assert not r.ok, r
    assert r.meta["code"] == "source_unavailable"
    assert "data/f3.parquet" in r.meta["error"] and "deleted after it was listed" in r.meta["error"]
    assert [p for p in tmp_path.iterdir() if p.name.startswith("vt-")] == []  # no debris


def test_redirect_is_not_followed(moto, proxy, parquet_set):
    b, _ = parquet_set
    proxy.add(Fault("redirect", method="GET", query="list-type=2", times=1))
    r = run_source(f"s3://{b}/data/", "--kind", "parquet", endpoint=proxy.endpoint)
    assert not r.ok, r
    assert "redirect" in r.meta["error"] and "eu-west-1" in r.meta["error"]


def test_plain_http_endpoint_needs_allow_http(moto, parquet_set):
    b, _ = parquet_set
    r = run_source(f"s3://{b}/data/", "--kind", "parquet", "--s3-endpoint", moto.endpoint,
                   "--path-style")
    assert not r.ok and r.meta["code"] == "invalid_config" and "allow_http" in r.meta["error"]


# ---- authentication (moto checks SigV4 signatures) -----------------------------------

@pytest.fixture(scope="module")
def auth_data(moto_auth, tmp_path_factory):
    d = tmp_path_factory.mktemp("authdata")
    f = write_parquet(d / "a.parquet", "SELECT range AS id FROM range(10)")
    moto_auth.create_bucket("vt-auth")
    moto_auth.upload_file("vt-auth", "a.parquet", f)
    moto_auth.upload_file("vt-auth", "b.parquet", f)
    corpus = corpus_dir()
    if corpus:
        moto_auth.upload_tree(corpus / "delta-0.8.0", "vt-auth", "delta")
    moto_auth.enable_auth()
    return f


def test_signed_requests_accepted_and_wrong_credentials_denied(moto_auth, auth_data):
    good = (moto_auth.key_id, moto_auth.secret)
    # moto re-derives the signature from the request it received; it decodes
    # %2F in query values before doing so, so this check uses a listing
    # without '/' in the prefix (a glob at the bucket root).
    r = run_source("s3://vt-auth/*.parquet", endpoint=moto_auth.endpoint, creds=good)
    assert r.ok, r
    assert len(r.rows) == 20
    r = run_source("s3://vt-auth/*.parquet", endpoint=moto_auth.endpoint,
                   creds=(moto_auth.key_id, "wrong-secret"))
    assert not r.ok, r
    assert r.meta["access_denied"] is True
    assert "access denied" in r.meta["error"] and "SignatureDoesNotMatch" in r.meta["error"]
    assert "wrong-secret" not in r.proc.stdout + r.proc.stderr
    r = run_source("s3://vt-auth/*.parquet", endpoint=moto_auth.endpoint,
                   creds=("AKIANOSUCHKEY0000000", "x"))
    assert not r.ok and r.meta["access_denied"] is True, r
    # Per-dataset credential variables (s3.access_key_id_env / secret_access_key_env).
    r = run_source("s3://vt-auth/*.parquet", "--key-env", "VT_K", "--secret-env", "VT_S",
                   endpoint=moto_auth.endpoint, creds=("AKIANOSUCHKEY0000000", "x"),
                   env={"VT_K": good[0], "VT_S": good[1]})
    assert r.ok, r


# ---- raw client operations -------------------------------------------------------------

def test_head_get_and_byte_ranges(moto):
    b = new_bucket(moto)
    moto.put(b, "raw/hello world+.txt", b"0123456789abcdef")
    loc = f"s3://{b}/raw/hello world+.txt"
    r = run_source(loc, "--s3-op", "head", endpoint=moto.endpoint)
    assert r.ok and r.meta["size"] == 16 and r.meta["etag"].startswith('"'), r
    r = run_source(loc, "--s3-op", "get", endpoint=moto.endpoint)
    assert r.ok and r.meta["text"] == "0123456789abcdef", r
    r = run_source(loc, "--s3-op", "range:4:3", endpoint=moto.endpoint)
    assert r.ok and r.meta["text"] == "456", r
    r = run_source(loc, "--s3-op", "range:10:-1", endpoint=moto.endpoint)
    assert r.ok and r.meta["text"] == "abcdef", r
    r = run_source(f"s3://{b}/raw/missing", "--s3-op", "head", endpoint=moto.endpoint)
    assert not r.ok and "not found" in r.meta["error"], r


def test_delta_listing_starts_at_last_checkpoint(moto, proxy, delta_bucket):
    """_last_checkpoint names version 10: the log listing starts there
    (start-after) instead of listing every commit."""
    b, corpus = delta_bucket
    r = run_source(f"s3://{b}/tables/simple_table_with_checkpoint", endpoint=proxy.endpoint)
    assert r.ok, r
    assert r.rows == run_source(str(corpus / "simple_table_with_checkpoint")).rows
    lists = proxy.requests("GET", query="list-type=2")
    assert len(lists) == 1 and "start-after=" in lists[0][2], lists
    gets = [q[1] for q in proxy.requests("GET") if "list-type" not in q[2]]
    assert not any(g.endswith("00000000000000000001.json") for g in gets)  # history not read


def test_delta_wrong_credentials_is_access_denied(moto_auth, auth_data):
    if not corpus_dir():
        pytest.fail("Delta corpus not found (expected ../shared/delta-tables)")
    r = run_source("s3://vt-auth/delta", endpoint=moto_auth.endpoint,
                   creds=(moto_auth.key_id, "wrong-secret"))
    assert not r.ok and r.meta["access_denied"] is True, r
    assert r.meta["code"] == "source_unavailable"
