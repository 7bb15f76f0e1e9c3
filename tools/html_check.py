#!/usr/bin/env python3
"""Opens every page of one or more run folders in a real browser (Chromium, driven by
Playwright) and checks what a reader would meet: each page loads with no console error, no
failed request and no broken link; each shape's table has a row per row of results.json (a
row per rung); every chart's SVG has a size; a roofline point shows its tooltip on hover; the
table sorts and filters. Saves a screenshot of each run page as `index-screenshot.png` in its
run folder.

    python3 tools/html_check.py RUN_DIR [RUN_DIR ...]

Chromium comes from the system (`apt-get install chromium`, see tools/install-browser.sh),
never from `playwright install`. Exits non-zero, naming every problem, when any check fails.
"""

import html.parser
import json
import os
import pathlib
import sys
import tempfile
import urllib.parse

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def slug(s):
    """The file-name and anchor-safe form the harness gives labels and ids."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in s)


class Ids(html.parser.HTMLParser):
    """The id attributes of a page."""

    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "id" and v:
                self.ids.add(v)


def ids_of(path, cache={}):
    if path not in cache:
        p = Ids()
        p.feed(path.read_text(encoding="utf-8"))
        cache[path] = p.ids
    return cache[path]


def check_run(context, run, problems):
    results = json.loads((run / "results.json").read_text())
    pages = [run / "index.html"] + sorted((run / "html").glob("*.html"))
    page = context.new_page()
    errors = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append("request failed: " + r.url))
    charts = 0
    for p in pages:
        errors.clear()
        page.goto(p.as_uri())
        page.wait_for_load_state("load")
        where = p.relative_to(run)
        for e in errors:
            problems.append(f"{where}: console: {e}")
        # Links: the file exists and so does the anchor.
        for href in page.eval_on_selector_all("a[href]", "as => as.map(a => a.href)"):
            url = urllib.parse.urlparse(href)
            if url.scheme != "file":
                continue
            target = pathlib.Path(urllib.parse.unquote(url.path))
            if not target.is_file():
                problems.append(f"{where}: broken link {href}")
            elif url.fragment and url.fragment not in ids_of(target):
                problems.append(f"{where}: no anchor #{url.fragment} in {target.name}")
        # Every chart has a size on screen.
        for box in page.eval_on_selector_all(
            "figure.chart svg",
            "ss => ss.map(s => { const r = s.getBoundingClientRect(); return [r.width, r.height]; })",
        ):
            charts += 1
            if not (box[0] > 0 and box[1] > 0):
                problems.append(f"{where}: a chart of size {box}")
    if charts == 0:
        problems.append(f"{run.name}: no chart at all")

    # Each shape's table: a row per row of the run, with every rung among them.
    for w in results["workloads"]:
        for s in w["shapes"]:
            p = run / "html" / f"shape-{w['workload']}-{slug(s['label'])}.html"
            page.goto(p.as_uri())
            shown = page.eval_on_selector_all("table#rows tbody tr", "rs => rs.map(r => r.id)")
            want = ["row-" + slug(r["id"]) for r in s["rows"]]
            if sorted(shown) != sorted(want):
                problems.append(f"{p.name}: rows {shown} but the run has {want}")
            rungs = [r for r in s["rows"] if r["role"] == "rung"]
            if len(page.query_selector_all("table#rows tbody tr.rung")) != len(rungs):
                problems.append(f"{p.name}: not a row per rung")
            # Sorting by a column puts its figures in order; filtering hides rows.
            head = page.query_selector("table#rows thead th:nth-child(1)")
            head.click()
            head.click()
            if head.get_attribute("aria-sort") != "descending":
                problems.append(f"{p.name}: the # column does not sort")
            stages = page.eval_on_selector_all(
                "form.filters select[data-key=stage] option", "os => os.map(o => o.value)"
            )
            if len(stages) > 2:
                page.select_option("form.filters select[data-key=stage]", stages[1])
                visible = page.eval_on_selector_all(
                    "table#rows tbody tr", "rs => rs.filter(r => !r.hidden).length"
                )
                if not 0 < visible < len(want):
                    problems.append(f"{p.name}: filtering by stage shows {visible} rows")
            # A roofline point names itself on hover, and without a script in its title.
            # The last point is drawn on top of any it overlaps.
            points = page.query_selector_all("circle.pt")
            point = points[-1] if points else None
            if point is not None:
                if not (point.eval_on_selector("title", "t => t.textContent") or "").strip():
                    problems.append(f"{p.name}: a roofline point without a title")
                # The event a pointer over it sends: a real hover waits for the page to stop
                # moving, which a loaded machine can delay past any timeout.
                point.dispatch_event("mouseenter")
                tip = page.wait_for_selector("#tip", state="visible", timeout=5000)
                if not tip.text_content().strip():
                    problems.append(f"{p.name}: an empty tooltip")

    page.goto((run / "index.html").as_uri())
    page.screenshot(path=str(run / "index-screenshot.png"))
    page.close()


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    if not pathlib.Path(CHROMIUM).is_file():
        print(f"{CHROMIUM} is missing: run tools/install-browser.sh", file=sys.stderr)
        return 2
    problems = []
    # A fresh profile each time: Playwright passes it as --user-data-dir.
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1300, "height": 1500},
        )
        for arg in argv[1:]:
            run = pathlib.Path(arg).resolve()
            check_run(context, run, problems)
            print(f"checked {run}: {len(list((run / 'html').glob('*.html'))) + 1} pages")
        context.close()
    for p in problems:
        print("problem:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
