"""The shipped report as a reader gets it: every link and image on every rendered page exists, and
no page is wider than its window at 1000, 1400 or 1600 px, nor any table wider than the box it sits
in unless that box scrolls (a wide table scrolls inside its own box instead of pushing the page
sideways or being cut off), measured in headless Chromium (one process, every page at every width).
Skipped, with the reason, where the report is not rendered or Chromium is not installed (Debian: apt-get install chromium)."""
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from lib.config import ROOT

REPORT = ROOT / "report"
WIDTHS, HEIGHT = (1000, 1400, 1600), 900


def pages() -> list[Path]:
    found = sorted(REPORT.glob("*.html"))
    if not (REPORT / "index.html").exists():
        pytest.skip("the report is not rendered (make report)")
    return found


class _Links(HTMLParser):
    """Every href and src of the page's elements (a script's text is not parsed for them)."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("href", "src") and v:
                self.urls.append(v)


def local_links(page: Path) -> list[str]:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    out = []
    for url in parser.urls:
        if re.match(r"^[a-z][a-z0-9+.-]*:", url, re.I) or url.startswith(("#", "//")):
            continue  # another site, data: or javascript:, or a place in the same page
        path = unquote(url.split("#")[0].split("?")[0])
        if path:
            out.append(path)
    return out


def test_every_link_on_every_rendered_page_exists():
    missing = []
    checked = 0
    for page in pages():
        for path in local_links(page):
            checked += 1
            if not (page.parent / path).exists():
                missing.append(f"{page.name}: {path}")
    assert not missing, "links to nothing:\n" + "\n".join(missing)
    assert checked > len(pages())  # the index and the navigation bars at least


def test_the_index_links_every_notebook_page():
    from lib.report.index_page import notebook_titles

    index = set(local_links(REPORT / "index.html")) if (REPORT / "index.html").exists() else set()
    if not index:
        pytest.skip("the report is not rendered (make report)")
    for name in notebook_titles():
        if (REPORT / f"{name}.html").exists():
            assert f"{name}.html" in index, name


# the measurement, run in each page (an iframe of the page's own size) once it has loaded: the page's
# own width against the window's, and every table, image, pre and svg that reaches past the window
# without a box of its own that scrolls, or is cut by one that does not scroll
_MEASURE = r"""
function measure(doc, win) {
  const vw = doc.documentElement.clientWidth, out = {scroll: doc.documentElement.scrollWidth, client: vw, cut: []};
  for (const el of doc.querySelectorAll("table, img, pre, svg")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    let scrolls = false, clipped = false, spills = false;
    const parent = el.parentElement, pr = parent ? parent.getBoundingClientRect() : null;
    for (let a = el.parentElement; a && a !== doc.body; a = a.parentElement) {
      const ox = win.getComputedStyle(a).overflowX;
      // an interactive table's header row moves with its body, which scrolls (DataTables' scroll head)
      const head = a.classList.contains("dt-scroll-head") || a.classList.contains("dataTables_scrollHead");
      if (ox === "auto" || ox === "scroll" || head) { scrolls = true; break; }
      if ((ox === "hidden" || ox === "clip") && r.right > a.getBoundingClientRect().right + 1) { clipped = true; break; }
    }
    // a table that scrolls within itself (display: block, overflow auto) is its own box
    const own = win.getComputedStyle(el).overflowX;
    if (own === "auto" || own === "scroll") scrolls = true;
    if (!scrolls && el.tagName === "TABLE" && pr && pr.width > 0 && r.right > pr.right + 1) spills = true;
    if (clipped || spills || (!scrolls && r.right > vw + 1))
      out.cut.push(el.tagName.toLowerCase() + " " + Math.round(r.width) + "px wide, right edge at " + Math.round(r.right)
                   + (spills ? " past its box's " + Math.round(pr.right) : ""));
  }
  // a cell whose text is wider than the cell and not clipped runs over its neighbour (itables' nowrap)
  for (const td of doc.querySelectorAll("td, th")) {
    if (td.clientWidth === 0) continue;
    if (td.scrollWidth > td.clientWidth + 2 && win.getComputedStyle(td).overflowX === "visible") {
      out.cut.push("a cell's text runs " + (td.scrollWidth - td.clientWidth) + "px over its neighbour: "
                   + td.textContent.slice(0, 40));
      break;
    }
  }
  return out;
}
"""


def _wrapper(paths: list[Path], widths=WIDTHS) -> str:
    frames = json.dumps([[p.resolve().as_uri(), w] for p in paths for w in widths])
    return f"""<!doctype html><html><body><pre id="out"></pre><script>{_MEASURE}
const frames = {frames}; const res = {{}}; let left = frames.length;
function done() {{ document.getElementById("out").textContent = "RESULT" + JSON.stringify(res) + "END"; }}
for (const [p, w] of frames) {{
  const f = document.createElement("iframe");
  f.style.width = w + "px"; f.style.height = "{HEIGHT}px";
  f.onload = () => setTimeout(() => {{
    try {{ res[p + " @" + w] = measure(f.contentDocument, f.contentWindow); }}
    catch (e) {{ res[p + " @" + w] = {{error: String(e)}}; }}
    if (--left === 0) done();
  }}, 500);
  f.src = p; document.body.appendChild(f);
}}
</script></body></html>"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("Chromium is not installed (Debian: apt-get install chromium), so the layout is not measured")


def layout_problems(found: list[Path], browser: str, scratch: Path, widths=WIDTHS) -> list[str]:
    """Every page at every width, measured in one headless Chromium: what is wider than its window or
    its box ("page.html @1000: table 1200px wide, ..."); empty when nothing is."""
    wrapper = scratch / "measure.html"
    wrapper.write_text(_wrapper(found, widths), encoding="utf-8")
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--allow-file-access-from-files", "--hide-scrollbars", f"--window-size={max(widths)},{HEIGHT}",
           "--virtual-time-budget=60000", "--dump-dom", wrapper.as_uri()]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.skip("Chromium did not finish measuring the pages within 5 minutes")
    m = re.search(r"RESULT(\{.*\})END", done.stdout, re.S)
    assert m, f"Chromium gave no measurement (exit {done.returncode}): {done.stderr[-1500:]}"
    res = json.loads(m.group(1))
    assert len(res) == len(found) * len(widths)
    problems = []
    for key, r in res.items():
        url, width = key.rsplit(" @", 1)
        name = f"{Path(unquote(url)).name} @{width}"
        if "error" in r:
            problems.append(f"{name}: {r['error']}")
            continue
        if r["scroll"] > r["client"] + 1:
            problems.append(f"{name}: the page is {r['scroll']} px wide in a {r['client']}-px window")
        problems += [f"{name}: {c}" for c in r["cut"]]
    return problems


def test_no_page_is_wider_than_the_window_and_no_table_is_cut(tmp_path):
    found = pages()
    problems = layout_problems(found, chromium(), tmp_path)
    assert not problems, "\n".join(problems)


def test_the_measurement_finds_a_cut_table_and_passes_one_that_scrolls(tmp_path):
    """The measurement itself, on two small pages: a 1,500-px table in a plain box is reported at
    1000 and 1400 px, the same table in a box that scrolls is not."""
    browser = chromium()
    row = "<tr>" + "".join(f"<td style='min-width:140px'>cell {i}</td>" for i in range(10)) + "</tr>"
    cut, fits = tmp_path / "cut.html", tmp_path / "fits.html"
    cut.write_text(f"<!doctype html><body><div style='max-width:900px'><table>{row}</table></div></body>")
    fits.write_text(f"<!doctype html><body><div style='overflow-x:auto'><table>{row}</table></div></body>")
    problems = layout_problems([cut, fits], browser, tmp_path)
    assert problems and all(p.startswith("cut.html") for p in problems), problems
    assert {p.split(":")[0] for p in problems} >= {"cut.html @1000", "cut.html @1400"}


def test_the_measurement_finds_text_that_runs_over_its_neighbouring_cell(tmp_path):
    """A fixed-width cell whose unbroken text is wider than it (as itables' nowrap tables drew the failure
    cases) is reported; the same text allowed to wrap is not."""
    browser = chromium()
    text = "a question that runs on and on " * 4
    cell = "<table style='table-layout:fixed;width:600px'><tr><td style='width:100px;{}'>{}</td><td>next</td></tr></table>"
    over, wraps = tmp_path / "over.html", tmp_path / "wraps.html"
    over.write_text("<!doctype html><body>" + cell.format("white-space:nowrap", text) + "</body>")
    wraps.write_text("<!doctype html><body>" + cell.format("white-space:normal", text) + "</body>")
    problems = layout_problems([over, wraps], browser, tmp_path, widths=(1000,))
    assert [p.split(":")[0] for p in problems] == ["over.html @1000"] and "runs" in problems[0], problems
