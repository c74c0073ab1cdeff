"""The web viewer in a real browser: headless Chromium driven by Selenium (Debian's `chromium` and
`chromium-driver`), against the real `view` server over job folders made by real trials. Hostile
text stays text (no alert, no element made from it), a run going on updates the open page
without a reload, and the filters work from the page. ``VIEWER_SCREENSHOTS=DIR`` saves the
pages at 1280 and 800 px wide (docs/viewer.md shows them)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.worker.viewer.support import HOSTILE, HOSTILE_CATEGORY, ORACLE_ID, Jobs, LiveRun, Server

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is a dev dependency")
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

WAIT = 60  # seconds for a condition on a busy machine


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if chromium is None:
        pytest.skip("headless Chromium is not installed (Debian package `chromium`)")
    if driver_path is None:
        pytest.skip("chromedriver is not installed (Debian package `chromium-driver`)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-extensions",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.set_page_load_timeout(WAIT)
    try:
        yield driver
    finally:
        driver.quit()


def no_alert(driver: object) -> None:
    try:
        driver.switch_to.alert  # type: ignore[attr-defined]  # noqa: B018
    except NoAlertPresentException:
        return
    raise AssertionError("a hostile string ran as script")


def shoot(driver: object, name: str) -> None:
    folder = os.environ.get("VIEWER_SCREENSHOTS")
    if not folder:
        return
    for width in (1280, 800):
        driver.set_window_size(width, 900)  # type: ignore[attr-defined]
        height = driver.execute_script("return document.body.scrollHeight")  # type: ignore[attr-defined]
        driver.set_window_size(width, min(max(int(height), 600), 2400))  # type: ignore[attr-defined]
        driver.save_screenshot(str(Path(folder) / f"viewer-{name}-{width}.png"))  # type: ignore[attr-defined]
    driver.set_window_size(1280, 900)  # type: ignore[attr-defined]


def test_hostile_text_stays_text(browser: object, jobs: Jobs, server: Server) -> None:
    d = browser
    trial = jobs.trial_ids("script")[0]
    d.get(f"{server.url}/trial/0/{jobs.runs['script']}/{trial}")  # type: ignore[attr-defined]
    no_alert(d)
    find = d.find_elements  # type: ignore[attr-defined]
    assert len(find(By.TAG_NAME, "script")) == 1 and not find(By.TAG_NAME, "img")
    shown = [e.text for e in find(By.TAG_NAME, "pre")]
    assert any(HOSTILE in text for text in shown)  # the instruction, as written
    assert d.find_element(By.CSS_SELECTOR, ".step.action.bad")  # type: ignore[attr-defined]
    assert "exit 3" in d.find_element(By.CSS_SELECTOR, ".step.action").text  # type: ignore[attr-defined]
    shoot(d, "trial")
    d.get(f"{server.url}/trials")  # type: ignore[attr-defined]
    no_alert(d)
    assert not find(By.TAG_NAME, "img")
    assert "<img src=x onerror=alert(2)>" in d.find_element(By.ID, "trials").text  # type: ignore[attr-defined]


def test_filters_from_the_page(browser: object, jobs: Jobs, server: Server) -> None:
    d = browser
    d.get(f"{server.url}/trials")  # type: ignore[attr-defined]
    shoot(d, "trials")
    Select(d.find_element(By.NAME, "outcome")).select_by_value("failed")  # type: ignore[attr-defined]
    WebDriverWait(d, WAIT).until(lambda drv: "outcome=failed" in drv.current_url)
    rows = d.find_elements(By.CSS_SELECTOR, "tr.trial")  # type: ignore[attr-defined]
    assert len(rows) == 3 and {r.get_attribute("data-outcome") for r in rows} == {"failed"}
    shoot(d, "failures")
    d.set_window_size(800, 900)  # type: ignore[attr-defined]
    try:  # at 800 px the failures, with their reasons, fit the page: no column cut at its edge
        overflow = d.execute_script(  # type: ignore[attr-defined]
            "var s=document.querySelector('.scroll');return s.scrollWidth-s.clientWidth;"
        )
        assert overflow <= 1, f"the trials table overflows by {overflow} px at 800 px"
    finally:
        d.set_window_size(1280, 900)  # type: ignore[attr-defined]
    d.get(f"{server.url}/compare?a=agent:oracle&b=agent:nop")  # type: ignore[attr-defined]
    assert len(d.find_elements(By.CSS_SELECTOR, "#compare tr.differs")) == 3  # type: ignore[attr-defined]
    shoot(d, "compare")


def test_a_running_run_updates_the_open_page(
    browser: object, jobs: Jobs, server: Server, live_run: Callable[[str], LiveRun]
) -> None:
    d = browser
    run = live_run("oracle")
    d.get(f"{server.url}/trials?run={run.run_id}")  # type: ignore[attr-defined]
    WebDriverWait(d, WAIT).until(lambda drv: drv.find_element(By.ID, "live-state").text == "live")

    def outcomes(drv: object) -> list[str]:
        # read in one script: the page swaps its content in between two element lookups
        script = (
            "return Array.from(document.querySelectorAll('tr.trial'))"
            ".map(function(r){return r.dataset.outcome;}).sort()"
        )
        return list(drv.execute_script(script))  # type: ignore[attr-defined]

    def progress(drv: object) -> str:
        script = "var p=document.getElementById('progress');return p?p.textContent:''"
        return str(drv.execute_script(script))  # type: ignore[attr-defined]

    assert "0/2 done" in progress(d)
    run.start(run.keys[0])
    WebDriverWait(d, WAIT).until(lambda drv: outcomes(drv) == ["queued", "running"])
    run.finish(run.keys[0])
    run.start(run.keys[1])
    WebDriverWait(d, WAIT).until(lambda drv: outcomes(drv) == ["passed", "running"])
    shoot(d, "live")
    run.finish(run.keys[1])
    WebDriverWait(d, WAIT).until(lambda drv: outcomes(drv) == ["passed", "passed"])
    WebDriverWait(d, WAIT).until(lambda drv: "2/2 done" in progress(drv))
    # the same page all along, its content swapped in (never reloaded)
    updates = d.execute_script("return document.body.dataset.updates")  # type: ignore[attr-defined]
    assert int(updates) >= 3


def test_a_log_opened_on_a_running_trial_stays_open(
    browser: object, jobs: Jobs, server: Server, live_run: Callable[[str], LiveRun]
) -> None:
    """Following a running trial: an agent log the reader opened stays open (and the page where
    it was) when the page takes in what the trial recorded since."""
    d = browser
    run = live_run("script")
    trial = run.start(run.keys[0])
    d.get(f"{server.url}/trial/0/{run.run_id}/{trial}")  # type: ignore[attr-defined]
    WebDriverWait(d, WAIT).until(lambda drv: drv.find_element(By.ID, "live-state").text == "live")
    d.execute_script("document.querySelector('details').open=true")  # type: ignore[attr-defined]
    before = int(d.execute_script("return Number(document.body.dataset.updates||0)"))  # type: ignore[attr-defined]
    run.finish(run.keys[0])
    WebDriverWait(d, WAIT).until(
        lambda drv: (
            int(drv.execute_script("return Number(document.body.dataset.updates||0)")) > before
            and "Verifier output" in drv.find_element(By.ID, "live").text
            and "no verifier output recorded" not in drv.find_element(By.ID, "live").text
        )
    )
    assert d.execute_script("return document.querySelector('details').open")  # type: ignore[attr-defined]


def test_the_leaderboard_of_results_files_sorts_and_links_to_trials(
    browser: object, jobs: Jobs, results_server: Server
) -> None:
    """`view --results`: the tables render (hostile text as text), a heading click sorts the
    table, a trial id opens its trial."""
    d = browser
    d.get(f"{results_server.url}/leaderboard")  # type: ignore[attr-defined]
    no_alert(d)
    assert d.find_elements(By.CSS_SELECTOR, "svg.chart")  # type: ignore[attr-defined]
    texts = d.execute_script(  # type: ignore[attr-defined]
        "return Array.from(document.querySelectorAll('svg .label')).map(function(t){"
        "return t.textContent;})"
    )
    assert HOSTILE_CATEGORY in texts  # the category's text, not an element made from it
    shoot(d, "leaderboard")
    d.set_window_size(800, 900)  # type: ignore[attr-defined]
    try:  # at 800 px the chart's text stays readable (its box scrolls sideways instead)
        size = d.execute_script(  # type: ignore[attr-defined]
            "var t=document.querySelector('svg.chart .value');"
            "return t.getBoundingClientRect().height;"
        )
        assert size >= 9.5, f"the chart's text is {size} px high at 800 px"
    finally:
        d.set_window_size(1280, 900)  # type: ignore[attr-defined]
    order_script = (
        "return Array.from(document.querySelector('table[data-query=\"overall\"]').tBodies[0]"
        ".rows).map(function(r){return r.cells[0].getAttribute('title');})"
    )
    assert d.execute_script(order_script)[0] == ORACLE_ID  # type: ignore[attr-defined]  # best first
    heading = next(
        th
        for th in d.find_elements(By.CSS_SELECTOR, 'table[data-query="overall"] th')  # type: ignore[attr-defined]
        if th.text.startswith("Pass rate")
    )
    heading.click()  # ascending: the lowest pass rate first
    WebDriverWait(d, WAIT).until(lambda drv: drv.execute_script(order_script)[-1] == ORACLE_ID)
    assert heading.get_attribute("aria-sort") == "ascending"
    trial = jobs.trial_ids("oracle")[0]
    d.find_element(By.LINK_TEXT, trial).click()  # type: ignore[attr-defined]
    WebDriverWait(d, WAIT).until(
        lambda drv: f"/trial/0/{jobs.runs['oracle']}/{trial}" in drv.current_url
    )
    assert trial in d.find_element(By.TAG_NAME, "h1").text  # type: ignore[attr-defined]
