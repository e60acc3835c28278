"""The embedded docs site (docs.path, default /mkdocs/): every page reachable
from the index, no broken internal link or anchor, the pages the issue asks
for exist, and search works offline in headless Chromium (the lunr worker)
without a request leaving the server.
"""
import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urldefrag, urlparse

import requests

from conftest import BUILD, REPO
from explorer.browser import console_errors, drive


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        for k in ("href", "src"):
            if a.get(k):
                self.links.append(a[k])


def test_docs_site_links_and_offline_search(vt):
    s = vt("[server]\nport = 0\n", wait="listening")
    root = s.url("/mkdocs/")
    seen, pages, todo, broken = {}, {}, [root], []
    while todo:
        url = todo.pop()
        if url in seen:
            continue
        r = requests.get(url, timeout=10)
        seen[url] = r.status_code
        if r.status_code != 200:
            continue
        if r.headers["Content-Type"].startswith("text/html"):
            p = Links()
            p.feed(r.text)
            pages[url] = p
            for link in p.links:
                target = urljoin(url, link)
                if urlparse(target).netloc != urlparse(root).netloc:
                    continue
                base, frag = urldefrag(target)
                if base.startswith(root):
                    todo.append(base)
                if frag:
                    broken.append((url, base, frag))  # checked below once all pages are in
    bad = {u: c for u, c in seen.items() if c != 200}
    assert bad == {}, bad
    missing_anchors = [(src, base, f) for src, base, f in broken
                       if base in pages and f not in pages[base].ids]
    assert missing_anchors == [], missing_anchors[:10]
    # every page of the built site is reachable from the index
    built = {p.relative_to(BUILD / "ui/docs").as_posix()
             for p in (BUILD / "ui/docs").rglob("*.html") if p.name != "404.html"}
    reached = {urlparse(u).path[len("/mkdocs/"):] or "index.html" for u in pages}
    reached = {r + "index.html" if r.endswith("/") or r == "" else r for r in reached}
    assert built <= reached, built - reached
    for must in ("getting-started/index.html", "configuration/index.html", "api/index.html",
                 "query/index.html", "auth/index.html", "operations/index.html",
                 "performance/index.html", "explorer/index.html"):
        assert must in built, must
    # a config key is found by its own name (it is written server.allowed_roots)
    out = drive("docs", url=root, origin=s.base,
                pages=[root + "configuration/", root + "api/"], search="allowed_roots")
    assert console_errors(out) == [], out["console"]
    assert out["offsite"] == []
    assert out["searchHits"], "offline search found nothing"
    assert any("configuration/" in h for h in out["searchHits"]), out["searchHits"]


def test_docs_site_ships_no_jquery():
    """The stock mkdocs theme's jQuery 1.10.2 (known XSS CVEs) and Bootstrap
    are gone: the site is our own theme (ui/docs/theme)."""
    site = BUILD / "ui/docs"
    assert (site / "index.html").exists()
    for p in site.rglob("*"):
        if p.is_file() and p.suffix in (".js", ".html", ".css"):
            text = p.read_text(errors="replace")
            assert "jQuery" not in text and "jquery" not in p.name.lower(), p
            assert "bootstrap" not in p.name.lower(), p


def test_api_errors_table_lists_every_code_the_api_answers():
    """docs/api.md's Errors table (the page says every error's status is
    there) names every code of src/util/errors.h that an HTTP answer can
    carry, in the row of its status. It once left out 22 of them, from
    source_not_allowed (what a registration outside allowed_roots gets) to
    invalid_token and 421 host_not_allowed. Not HTTP answers: the pgwire
    rows (PG_*), client_gone (the client is no longer there to read it)
    and the statuses below 400."""
    rows = [(m.group(1), int(m.group(2)), m.group(3)) for m in
            re.finditer(r'X\((\w+), (\d+), "(\w+)"', (REPO / "src/util/errors.h").read_text())]
    doc = (REPO / "docs/api.md").read_text()
    table = {}
    for line in doc[doc.index("\n## Errors"):].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.match(r"\d{3}", cells[0]):
            statuses = {int(x) for x in re.findall(r"\d{3}", cells[0])}
            for code in re.findall(r"`(\w+)`", cells[2]):
                table.setdefault(code, set()).update(statuses)
    assert len(rows) > 60 and len(table) > 20
    wrong = [(code, status, sorted(table.get(code, ())))
             for name, status, code in rows
             if status >= 400 and not name.startswith("PG_") and name != "CLIENT_GONE"
             and status not in table.get(code, ())]
    assert wrong == [], wrong
