#!/usr/bin/python3
"""Memory per generation (not part of make check; minutes): one process (or a
writer and a reader) on loopback with moto, the `trips` dataset of the soak
reloaded GENS times with no client load; prints RSS, open files and threads
and DuckDB's own memory (vitrine_duckdb_memory_bytes) every 50 generations.
ROLE=reader (default) samples a reader importing the
writer's generations; ROLE=standalone one process building them itself.
LOAD=http,pg,mcp (a comma list, one client thread each; default none) keeps
soak.py's clients querying the sampled process meanwhile.
HEAPTRACK=/path/out.zst runs the sampled process under heaptrack's preload
library and kills it (-9) at the end, so heaptrack's "leaked" is its live
heap then; two lengths compared show what grows per generation:
  heaptrack_print -f long.zst -d short.zst -l 1 -p 0 -a 0 -T 0 -s 0

  VITRINE_BUILD=$PWD/build GENS=400 /usr/bin/python3 tests/soak/rss_per_generation.py
"""
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "e2e"))
sys.path.insert(0, str(HERE))
import soak  # noqa: E402
from conftest import Server  # noqa: E402
from pgwire_util import pg_port  # noqa: E402
from s3_fixtures import Moto, find_moto  # noqa: E402

GENS = int(os.environ.get("GENS", "400"))
ROLE = os.environ.get("ROLE", "reader")
LOAD = [k for k in os.environ.get("LOAD", "").split(",") if k]
HEAPTRACK = os.environ.get("HEAPTRACK")
HT_LIB = "/usr/lib/heaptrack"  # Debian's heaptrack package


def heaptrack_env(root):
    """The environment that runs a process under heaptrack (its preload
    library writing to a FIFO that heaptrack_interpret reads), and that
    interpreter."""
    pipe = root / "heaptrack.fifo"
    os.mkfifo(pipe)
    out = open(HEAPTRACK, "wb")
    interp = subprocess.Popen(f"{HT_LIB}/libexec/heaptrack_interpret < {pipe} | zstd -q -c",
                              shell=True, stdout=out)
    env = dict(soak.ENV, LD_PRELOAD=f"{HT_LIB}/libheaptrack_preload.so",
               DUMP_HEAPTRACK_OUTPUT=str(pipe))
    return env, interp


def cfg(*args, **kw):
    return soak.config(*args, **kw).replace("[cluster]\n", "[metrics]\nenabled = true\n[cluster]\n")


def duckdb_mib(server):
    m = re.search(r"^vitrine_duckdb_memory_bytes (\S+)", server.get("/metrics").text, re.M)
    return float(m.group(1)) / 2**20 if m else -1.0


def main():
    root = Path(tempfile.mkdtemp(prefix="vitrine-rss-"))
    moto = Moto(find_moto(), root).start()
    try:
        data = soak.make_sources(root, moto)
        ep = f"http://127.0.0.1:{moto.port}"
        (root / "w").mkdir()
        ht_env, interp = heaptrack_env(root) if HEAPTRACK else (soak.ENV, None)
        w = Server(root / "w", cfg("writer" if ROLE == "reader" else "standalone",
                                   0, ep, data, pgwire="pg" in LOAD and ROLE != "reader"),
                   env=soak.ENV if ROLE == "reader" else ht_env).start()
        w.wait_ready(120)
        r = w
        if ROLE == "reader":
            (root / "r").mkdir()
            r = Server(root / "r", cfg("reader", 0, ep, root / "nowhere", pgwire="pg" in LOAD),
                       env=ht_env).start()
            r.wait_ready(120)
        load = soak.LoadRunner(r, pg_port(r) if "pg" in LOAD else 0, LOAD) if LOAD else None
        t0 = time.time()
        for i in range(GENS + 1):
            if i % 50 == 0:
                gid = w.get("/api/v1/datasets/trips/status").json()["generation_id"]
                deadline = time.time() + 20
                while (time.time() < deadline and
                       r.get("/api/v1/datasets/trips/status").json()["generation_id"] != gid):
                    time.sleep(0.05)
                time.sleep(1.1)  # DuckDB's memory is sampled every second
                rss, fds, threads = soak.proc_stats(r.proc.pid)
                print(f"{ROLE} generation {i:4d} t={time.time() - t0:5.0f}s RSS {rss:6.1f} MiB "
                      f"DuckDB {duckdb_mib(r):5.2f} MiB fds {fds} threads {threads}", flush=True)
            w.post("/api/v1/datasets/trips/reload", headers=soak.ADMIN, timeout=60)
            time.sleep(0.6)
        if load:
            load.finish()
            print(f"load: {load.counts}, {len(load.failures)} failed {load.failures[:3]}")
        if HEAPTRACK:  # the live heap now is heaptrack's "leaked"
            r.kill()
            interp.wait(120)
        elif r is not w:
            r.stop()
        if r is not w or not HEAPTRACK:
            w.stop()
    finally:
        moto.stop()


if __name__ == "__main__":
    main()
