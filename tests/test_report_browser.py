"""The HTML report read in a real headless browser (issue 28, item 3): Chromium from the
distribution's packages driven by Selenium opens a report of real claims (a sweep, a failing claim
with a counterexample, Monte Carlo tests, a `depends` headline): the page renders, every plot loads
as an image, every in-page link resolves to an element, and the console has no error. At common
widths (1280, 1024, 768 and 390 px) nothing is wider than the window, the summary table fits a
1280 px page with its controls column on screen, and no label overlaps another: not on the page
(table cells, badges, figures) and not in the plots (their texts, ``label_overlaps``). The page
stays small enough to mail (a budget per plot, so the whole registry's page stays under about 2 MB)."""
from __future__ import annotations

import shutil

import pytest

from spectheory.sims.report_html import to_html
from spectheory.sims.runner import run_claims

webdriver = pytest.importorskip("selenium.webdriver")
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                                reason="no headless Chromium/chromedriver (apt-get install chromium chromium-driver)")

#: bytes of inline PNG per plot, on average: 46 plots in ~2 MB
PLOT_BUDGET = 2_000_000 // 46


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    rep = run_claims("sd.lossless,entropy.kl_lower,sb.thm1,ecsv.majority,ersd.batch_crossover", quick=True,
                     progress=False, jobs=1)
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(to_html(rep), encoding="utf-8")
    return rep, path


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    opts = Options()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--window-size=1280,2000"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    yield drv
    drv.quit()


def test_the_report_renders_with_every_plot_and_link_and_no_console_error(page, browser):
    rep, path = page
    browser.get(path.as_uri())
    body = browser.find_element("tag name", "body").text
    for c in rep["claims"]:
        assert c["id"] in body
    imgs = browser.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight, i.alt]);")
    assert len(imgs) >= len(rep["claims"]) - 1, imgs  # a plot per claim that has something to draw
    assert all(ok and w > 100 and h > 100 for ok, w, h, _ in imgs), imgs
    links = browser.execute_script(
        "return Array.from(document.querySelectorAll('a[href^=\"#\"]')).map(a => a.getAttribute('href'));")
    assert links, "the summary links to each claim's section"
    missing = [h for h in links if not browser.execute_script(
        "return document.getElementById(arguments[0]) !== null || document.getElementsByName(arguments[0]).length > 0;",
        h[1:])]
    assert not missing, missing
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, errors


#: what the page must not do at a width: scroll sideways, push the summary table past its column,
#: let a table cell, a badge or a figure spill over its neighbour (returns what it finds)
LAYOUT = """
const out = [];
const W = window.innerWidth;
if (document.documentElement.scrollWidth > W + 1) out.push('page wider than the window: ' +
    document.documentElement.scrollWidth + ' > ' + W);
const main = document.querySelector('main').getBoundingClientRect();
const table = document.querySelector('table.summary');
if (table && arguments[0]) {
  const t = table.getBoundingClientRect();
  if (t.right > main.right + 1) out.push('summary table wider than the page: ' + t.right + ' > ' + main.right);
  const wrap = table.parentElement;
  if (wrap.scrollWidth > wrap.clientWidth + 1) out.push('summary table scrolls: ' + wrap.scrollWidth);
  for (const th of table.querySelectorAll('th')) {
    if (th.getBoundingClientRect().right > W + 1) out.push('column off screen: ' + th.textContent);
  }
}
for (const tr of document.querySelectorAll('tr')) {
  const cells = Array.from(tr.children).map(c => c.getBoundingClientRect());
  for (let i = 1; i < cells.length; i++) {
    if (cells[i].left < cells[i - 1].right - 1) out.push('cells overlap in: ' + tr.textContent.slice(0, 60));
  }
}
for (const b of document.querySelectorAll('.badge, td code, figure img')) {
  const r = b.getBoundingClientRect(), box = b.closest('td, figure, main').getBoundingClientRect();
  if (r.width > 0 && (r.right > box.right + 1 || r.left < box.left - 1))
    out.push('spills over its box: ' + (b.textContent || b.alt).slice(0, 60));
}
return out;
"""


def _at_width(browser, width):
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False})


@pytest.mark.parametrize("width", [1280, 1024, 768, 390])
def test_the_page_fits_common_widths_and_no_label_overlaps_another(page, browser, width):
    """Wider than 1000 px the summary table fits the page (every column, the controls too, on
    screen, no scrolling); at any width the page itself never scrolls sideways (a table too wide
    for a phone scrolls inside its own box) and no cell, badge or figure spills over another."""
    _, path = page
    _at_width(browser, width)
    try:
        browser.get(path.as_uri())
        assert browser.execute_script("return window.innerWidth;") == width
        problems = browser.execute_script(LAYOUT, width >= 1000)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert not problems, problems


def test_no_plot_of_the_page_has_overlapping_labels_and_the_headlines_part_comes_first(page, browser):
    """The plots are images: their labels are checked on the figures the page embeds; the depends
    headline's failing part (batch-moderate) is the first panel, named in the page's caption."""
    import matplotlib.pyplot as plt

    from spectheory.sims.report_html import claim_plot, focus_parts, label_overlaps
    rep, path = page
    for c in rep["claims"]:
        drawn = claim_plot(c)
        if drawn is None:
            continue
        fig, _ = drawn
        assert label_overlaps(fig) == [], c["id"]
        focus = focus_parts(c)
        if focus:
            assert fig.axes[0].get_title().replace("\n", " ").startswith(f"part {focus[0]} (fails): "), c["id"]
        plt.close(fig)
    browser.get(path.as_uri())
    caption = browser.execute_script(
        "return document.querySelector('#ersd-batch-crossover figcaption').textContent;")
    assert caption.startswith("First: the part behind the headline (batch-moderate)"), caption


def test_plots_are_compressed_within_the_page_budget(page):
    rep, path = page
    html = path.read_text(encoding="utf-8")
    import re
    pngs = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert pngs
    sizes = [len(p) * 3 // 4 for p in pngs]
    assert sum(sizes) / len(sizes) <= PLOT_BUDGET, sizes


def test_the_checks_see_a_broken_page(browser, tmp_path):
    """Not vacuous: a broken image, a dangling in-page link and a script error are each seen."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!doctype html><html><body><a href="#nowhere">x</a>'
                   '<img src="data:image/png;base64,AAAA" alt="p"><script>undefinedFunction()</script></body></html>')
    browser.get(bad.as_uri())
    imgs = browser.execute_script("return Array.from(document.images).map(i => i.naturalWidth);")
    assert imgs == [0]
    assert browser.execute_script("return document.getElementById('nowhere');") is None
    assert any(e["level"] == "SEVERE" for e in browser.get_log("browser"))
    wide = tmp_path / "wide.html"
    wide.write_text('<!doctype html><html><body><main><table class="summary"><tr><th>a</th><th>controls</th></tr>'
                    '<tr><td><span class="badge" style="display:inline-block;width:3000px">x</span></td>'
                    '<td>y</td></tr></table></main></body></html>')
    _at_width(browser, 1280)
    try:
        browser.get(wide.as_uri())
        problems = browser.execute_script(LAYOUT, True)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert any(p.startswith("page wider than the window") for p in problems), problems
    assert any(p.startswith("summary table wider than the page") for p in problems), problems
    assert any(p.startswith("column off screen") for p in problems), problems
