"""Every table of the built manual stays inside its content column, measured in a real headless Chromium.

The site is built with mkdocs and served on 127.0.0.1; one harness page loads every built page that holds a table
into a 1280-px-wide frame (the width of a laptop browser window), lets Material's script wrap the tables, and
measures, for each table, where it is visibly cut: its own right edge, or that of the innermost box around it that
scrolls or clips (Material's scroll wrapper, the `.md-typeset__table` box that docs/stylesheets/tables.css makes
scroll). That edge must not pass the right edge of the content column (`.md-content`, the column between the
navigation and the table of contents), and no page may scroll sideways. A control page proves the measurement sees
an overflow: the same racing page with a 40-column table added, once as built (the table must scroll inside the
column) and once with every scroll box turned off by an extra style (the table must be reported past the column).
Skipped, with the reason, where Chromium or the docs extra is missing.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _browser import CHROMIUM, FLAGS, NO_CHROMIUM
from conftest import ROOT

pytest.importorskip("mkdocs", reason="mkdocs (the 'docs' extra) is not installed")
pytest.importorskip("material", reason="mkdocs-material (the 'docs' extra) is not installed")
if CHROMIUM is None:
    pytest.skip(NO_CHROMIUM, allow_module_level=True)

WIDTH = 1280  # px: the frame every page is measured in
SLACK = 0.5  # px: layout rounds edges to fractions of a pixel; an overflow to fix is at least a column of text

# Runs in the harness page. For each page: load it in a WIDTH-px frame, wait until Material has wrapped every table
# (or 5 s: a table it left alone is measured as it stands), then measure; post the results to the server.
HARNESS = """<!doctype html><meta charset="utf-8"><body><script>
const PAGES = %(pages)s, WIDTH = %(width)d;
function measure(doc, win) {
  const col = doc.querySelector('.md-content');
  if (!col) return {error: 'no .md-content on the page'};
  const c = col.getBoundingClientRect(), tables = [];
  for (const t of col.querySelectorAll('table')) {
    let right = t.getBoundingClientRect().right, cut_by = 'the table itself';
    for (let el = t; el && el !== col; el = el.parentElement) {   // boxes inside the column that clip the table
      const st = win.getComputedStyle(el);
      if (st.overflowX !== 'visible' && !st.display.endsWith('table')) {   // a table box never clips
        const r = el.getBoundingClientRect().right;
        if (r < right) { right = r; cut_by = el.className || el.tagName; }
      }
    }
    tables.push({right: right, cut_by: cut_by, width: t.scrollWidth,
                 head: t.textContent.trim().replace(/\\s+/g, ' ').slice(0, 60)});
  }
  return {column_right: c.right, scroll_width: doc.documentElement.scrollWidth,
          client_width: doc.documentElement.clientWidth, tables: tables};
}
const frame = () => new Promise(ok => requestAnimationFrame(() => requestAnimationFrame(ok)));
async function run() {
  const out = {};
  for (const p of PAGES) {
    const f = document.createElement('iframe');
    f.style.cssText = `width:${WIDTH}px;height:900px;border:0`;
    await new Promise(ok => { f.onload = ok; f.src = '/' + p; document.body.appendChild(f); });
    const doc = f.contentDocument, t0 = Date.now();
    while (doc.querySelectorAll('table').length > doc.querySelectorAll('.md-typeset__table table').length
           && Date.now() - t0 < 5000) await frame();
    await doc.fonts.ready; await frame();
    try { out[p] = measure(doc, f.contentWindow); } catch (e) { out[p] = {error: String(e)}; }
    f.remove();
  }
  await fetch('/results', {method: 'POST', body: JSON.stringify(out)});
}
run().catch(e => fetch('/results', {method: 'POST', body: JSON.stringify({error: String(e)})}));
</script>"""

WIDE = (  # a table far wider than any column: 40 cells of unbreakable text
    "<table><thead><tr>"
    + "".join(f"<th>column_{i}_with_a_long_unbreakable_name</th>" for i in range(40))
    + "</tr></thead><tbody><tr>"
    + "".join(f"<td><code>value_{i}_that_does_not_wrap</code></td>" for i in range(40))
    + "</tr></tbody></table>"
)
NO_SCROLL = (  # every box that could keep a wide table inside its column, turned off
    "<style>.md-typeset__scrollwrap, .md-typeset__table, .md-typeset table:not([class]) "
    "{overflow: visible !important; max-width: none !important}</style>"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The manual as `make docs` builds it, plus two control pages next to the racing page (same depth: its
    relative links to the theme's assets stay valid). `make test` has just built the site (strict) when it runs
    pytest and names it in `MF_SCHED_DOCS_SITE`: a copy of that is used; otherwise the site is built here (~10 s)."""
    out = tmp_path_factory.mktemp("docs") / "site"
    given = os.environ.get("MF_SCHED_DOCS_SITE")
    if given:
        built = ROOT / given  # relative to the repository root (an absolute path stays as it is)
        assert (built / "index.html").is_file(), f"MF_SCHED_DOCS_SITE={given} holds no built site"
        shutil.copytree(built, out)
    else:
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        res = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(out)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert res.returncode == 0, f"mkdocs build failed:\n{res.stderr[-3000:]}"
    racing = (out / "racing" / "index.html").read_text(encoding="utf-8")
    article = re.search(r'<article class="md-content__inner[^"]*">', racing)
    assert article, "the racing page has no article (the theme's layout changed?)"
    wide = racing[: article.end()] + WIDE + racing[article.end() :]
    for name, page in [("_control-wide", wide), ("_control-no-scroll", wide.replace("</head>", NO_SCROLL + "</head>"))]:
        (out / name).mkdir()
        (out / name / "index.html").write_text(page, encoding="utf-8")
    return out


@contextmanager
def serve(root: Path) -> Iterator[tuple[str, dict[str, str], threading.Event]]:
    """Serve `root` on 127.0.0.1; a POST to /results stores its body in the dict and sets the event. The search
    index is answered 404: the search is not under test, and indexing 600 KB on every page loaded dominates the
    time."""
    posted: dict[str, str] = {}
    done = threading.Event()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path.endswith("search_index.json"):
                self.send_error(404)
            else:
                super().do_GET()

        def do_POST(self):
            posted["body"] = self.rfile.read(int(self.headers["Content-Length"])).decode()
            self.send_response(204)
            self.end_headers()
            done.set()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", posted, done
    finally:
        server.shutdown()
        server.server_close()


def measure(site: Path, pages: list[str], tmp: Path) -> dict[str, dict]:
    """The measurements of `pages` (paths under the site, `""` for the home page), from one Chromium run."""
    (site / "_harness.html").write_text(HARNESS % {"pages": json.dumps(pages), "width": WIDTH}, encoding="utf-8")
    with serve(site) as (url, posted, done):
        # every host but 127.0.0.1 fails at once: the pages link web fonts, which cannot load without a network
        cmd = [
            CHROMIUM,
            *FLAGS,
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            f"--user-data-dir={tmp / 'profile'}",
            f"--window-size={WIDTH + 100},1000",
            f"{url}/_harness.html",
        ]
        with open(tmp / "chromium.log", "w") as log:
            # its own process group: the browser and its helpers end together
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            finished = done.wait(240)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    log = (tmp / "chromium.log").read_text(errors="replace")[-3000:]
    assert finished, f"the harness posted no results within 240 s; Chromium said:\n{log}"
    out = json.loads(posted["body"])
    assert "error" not in out, out
    return out


def pages_with_tables(site: Path) -> dict[str, int]:
    """Every built page that holds a table, with its number of tables (the control pages left out)."""
    found = {}
    for f in sorted(site.rglob("index.html")):
        page = f.parent.relative_to(site).as_posix()
        n = f.read_text(encoding="utf-8").count("<table")
        if n and not page.startswith("_control"):
            found["" if page == "." else page + "/"] = n
    return found


def test_no_table_ends_past_its_content_column(site: Path, tmp_path: Path) -> None:
    expected = pages_with_tables(site)
    assert "racing/" in expected and len(expected) >= 10  # the manual's pages with tables were found
    got = measure(site, [*expected, "_control-wide/", "_control-no-scroll/"], tmp_path)
    past, widest = [], (0.0, "")
    for page, n in expected.items():
        m = got[page]
        assert "error" not in m, (page, m)
        assert len(m["tables"]) == n, f"{page}: {len(m['tables'])} tables measured, {n} in the HTML"
        assert m["scroll_width"] <= m["client_width"], f"{page} scrolls sideways: {m}"
        for t in m["tables"]:
            widest = max(widest, (t["width"], page))
            if t["right"] > m["column_right"] + SLACK:
                past.append(
                    f"{page}: table {t['head']!r} ends at {t['right']:.0f} px, column at {m['column_right']:.0f}"
                )
    assert not past, "tables past their column at a 1280-px-wide window:\n" + "\n".join(past)
    # the controls: a 40-column table scrolls inside the column as built, and is seen past it without scroll boxes
    wide, bare = got["_control-wide/"], got["_control-no-scroll/"]
    assert wide["tables"][0]["width"] > 3 * WIDTH
    assert wide["tables"][0]["right"] <= wide["column_right"] + SLACK, wide["tables"][0]
    assert bare["tables"][0]["cut_by"] == "the table itself"
    assert bare["tables"][0]["right"] > bare["column_right"] + WIDTH, bare["tables"][0]
    assert bare["scroll_width"] > bare["client_width"]
    print(f"{len(expected)} pages, {sum(expected.values())} tables; the widest: {widest[0]} px on {widest[1]}")


def test_every_page_has_exactly_one_title(site: Path) -> None:
    """One `<h1>` per built page: a single-module API page takes the module's heading as its title, so a `#` title
    of its own would show it twice (as the API pages once did)."""
    counts = {
        f.parent.relative_to(site).as_posix(): f.read_text(encoding="utf-8").count("<h1")
        for f in sorted(site.rglob("index.html"))
        if not f.parent.name.startswith("_control")
    }
    assert len(counts) > 30 and "api/racing_engine" in counts
    assert {page: n for page, n in counts.items() if n != 1} == {}
