"""The contract check's validator (tests/e2e/contract/validate.cjs, run by
`make contract-check` over what the e2e suite recorded) against a real
server's served document: real answers pass, and an undocumented status, a
media type the operation does not have, a body that breaks its schema, a
JSON answer that is not JSON and a recorder error are each reported."""
import hashlib
import json
import subprocess
from pathlib import Path

from conftest import server_block

E2E = Path(__file__).resolve().parent


def exchange(server, r, method, path, **over):
    ex = {"server": "s1", "method": method, "path": path, "status": r.status_code,
          "headers": {k.lower(): v for k, v in r.headers.items()}, "test": "test_contract",
          "body": "text", "text": r.text}
    ex.update(over)
    return ex


def run(tmp, doc_bytes, lines):
    d = tmp / "rec"
    (d / "docs").mkdir(parents=True)
    sha = hashlib.sha1(doc_bytes).hexdigest()
    (d / "docs" / f"{sha}.json").write_bytes(doc_bytes)
    lines = lines + [{"server": "s1", "doc": sha}]
    (d / "exchanges-t-1.ndjson").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return subprocess.run(["node", "contract/validate.cjs", str(d)], cwd=E2E,
                          capture_output=True, text=True, timeout=300)


def test_validator_passes_real_answers_and_reports_each_kind_of_mismatch(vt, tmp_path):
    s = vt(server_block())
    doc = s.get("/docs/openapi.json")
    assert doc.status_code == 200
    good = [exchange(s, s.get("/healthz"), "get", "/healthz"),
            exchange(s, s.get("/api/v1/datasets"), "get", "/api/v1/datasets"),
            exchange(s, s.get("/api/v1/datasets/nope/schema"), "get",
                     "/api/v1/datasets/nope/schema"),
            exchange(s, s.get("/no/such/path"), "get", "/no/such/path")]
    assert good[2]["status"] == 404
    r = run(tmp_path / "a", doc.content, good)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 exchanges recorded, 3 validated" in r.stdout, r.stdout
    assert "GET 404: 1" in r.stdout  # the unknown path: counted, not failed

    healthz = good[0]
    bad = [dict(healthz, status=418),
           dict(healthz, headers=dict(healthz["headers"], **{"content-type": "text/html"})),
           dict(good[2], text=json.dumps({"error": 1})),
           dict(good[1], text="{not json"),
           {"recorder_error": "ValueError('x')"},
           # an answer that is not vitrine's: no request id, no media type
           dict(good[3], headers={"content-length": "0"}, text="")]
    r = run(tmp_path / "b", doc.content, good + bad)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "GET /healthz -> 418" in out and "Unable to match the returned status code" in out, out
    assert "(text/html): error: The received media type" in out, out
    assert "GET /api/v1/datasets/{name}/schema -> 404" in out and "body" in out, out
    assert "body is not JSON" in out, out
    assert "PROBLEM recorder error: ValueError('x')" in out, out
    assert "PROBLEM 1 answers had neither X-Request-Id nor Content-Type" in out, out


def test_a_run_that_recorded_nothing_passes_unless_min_asks(tmp_path):
    # `make e2e PYTEST_ARGS=...` over modules whose servers serve no document
    # (or no server at all) records nothing: not a contract failure; the
    # whole-suite run asks for --min exchanges, so a recorder that stopped
    # recording fails there.
    def validate(*args):
        return subprocess.run(["node", "contract/validate.cjs", *args], cwd=E2E,
                              capture_output=True, text=True, timeout=300)
    missing = tmp_path / "none"
    r = validate(str(missing))
    assert r.returncode == 0 and "nothing recorded" in r.stdout, r.stdout + r.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "exchanges-gw0-1.ndjson").write_text(
        json.dumps({"server": "x", "method": "get", "path": "/healthz", "status": 200,
                    "headers": {}, "body": "none"}) + "\n")
    r = validate(str(empty))
    assert r.returncode == 0 and "nothing to validate" in r.stdout, r.stdout + r.stderr
    r = validate("--min", "1", str(empty))
    assert r.returncode == 1 and "fewer than --min 1" in r.stdout, r.stdout + r.stderr
    r = validate("--min", "1", str(missing))
    assert r.returncode == 1, r.stdout + r.stderr
