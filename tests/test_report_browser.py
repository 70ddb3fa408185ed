"""The HTML report read in a real headless browser (issue 28, item 3): Chromium from the
distribution's packages driven by Selenium opens a report of real claims (a sweep, a failing claim
with a counterexample, Monte Carlo tests): the page renders, every plot loads as an image, every
in-page link resolves to an element, and the console has no error. The page stays small enough to
mail (a budget per plot, so the whole registry's page stays under about 2 MB)."""
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
    rep = run_claims("sd.lossless,entropy.kl_lower,sb.thm1,ecsv.majority", quick=True, progress=False, jobs=1)
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
