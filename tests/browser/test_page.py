"""The live page in a real browser: Debian's Chromium, headless, driven by Playwright, on the observe listener
of an extender serving a snapshot file in shadow mode. Asserts what a person sees — the queue's rows and
reasons, one row per node, a job's pods in one colour with its PS marked, reserved pods as ghosts, the
scaler's planned growth and the waiting gang's start-time band arriving through the page's refresh — and
saves a screenshot (`ui.png`) in the
test's tmp dir.
Without Chromium the test is skipped, except in CI (CI=true), where hack/test.sh installs it first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from extender.devcluster import free_port
from tests.browser.scene import write_scene

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30.0
SCALER_PLAN_TIMEOUT_MS = 20_000
FORECAST_TIMEOUT_MS = 30_000
"""The forecast's first refresh comes a `refresh_s` (5 s) after the loops' first tick."""


def chromium_or_skip() -> str:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is missing: hack/test.sh installs it (apt-get install chromium)")
        pytest.skip("the browser test needs Debian's chromium (apt-get install chromium)")
    return CHROMIUM


@pytest.fixture
def extender_url(tmp_path: Path) -> Iterator[str]:
    snapshot = write_scene(tmp_path / "scene.json")
    port, observe_port = free_port(), free_port()
    command = [
        sys.executable,
        "-m",
        "extender",
        "serve",
        "--cluster-snapshot",
        str(snapshot),
        "--with-scaler",
        "--dry-run",
        "--scaler-interval-s",
        "1",
        "--port",
        str(port),
        "--observe-port",
        str(observe_port),
        "--observe-debug",
    ]
    log = (tmp_path / "extender.log").open("wb")
    process = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    url = f"http://127.0.0.1:{observe_port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(f"{url}/readyz"):
            assert process.poll() is None, (tmp_path / "extender.log").read_text()
            assert time.monotonic() < deadline, "the extender did not start"
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def test_the_page_shows_the_queue_nodes_coloured_by_job_and_the_shadow_plans(extender_url: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    executable = chromium_or_skip()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{extender_url}/ui")
            assert page.locator("#shadow").inner_text().startswith("shadow mode")
            rows = page.locator(".queue-row")
            assert [rows.nth(i).get_attribute("data-gang") for i in range(rows.count())] == [
                "default/mnist",
                "default/bert",
            ]
            bert = page.locator('.queue-row[data-gang="default/bert"]')
            assert "GangWaitingForRoom" in bert.inner_text()
            assert "needs 14 pods" in bert.locator(".why").inner_text()
            assert "GangReserved" in page.locator('.queue-row[data-gang="default/mnist"]').inner_text()
            assert page.locator(".node-row").count() == 4

            resnet = page.locator('.node-row[data-node="node-0"] .pod[data-job="default/resnet"]')
            assert resnet.count() == 6
            colours = {resnet.nth(i).evaluate("e => getComputedStyle(e).backgroundColor") for i in range(6)}
            assert len(colours) == 1
            elastic = page.locator('.pod[data-job="default/elastic"]').first
            assert elastic.evaluate("e => getComputedStyle(e).backgroundColor") not in colours
            ps = page.locator('.pod.ps[data-job="default/resnet"]')
            assert ps.inner_text() == "PS"
            assert ps.evaluate("e => getComputedStyle(e).borderTopColor") == "rgb(0, 0, 0)"

            ghosts = page.locator('.node-row[data-node="node-2"] .pod.ghost[data-job="default/mnist"]')
            assert ghosts.count() == 4
            assert ghosts.first.evaluate("e => getComputedStyle(e).borderTopStyle") == "dashed"

            planned = page.locator("#scaler tr", has_text="dry-run")
            planned.first.wait_for(timeout=SCALER_PLAN_TIMEOUT_MS)
            assert "default/elastic" in planned.first.inner_text()
            assert page.locator("#chart polyline").count() == 3
            band = page.locator('.queue-row[data-gang="default/bert"] .forecast .band')
            band.wait_for(timeout=FORECAST_TIMEOUT_MS)
            assert "most likely" in page.locator('.queue-row[data-gang="default/bert"] .forecast').inner_text()
            assert "expected to start in" in str(band.get_attribute("title"))
            page.screenshot(path=str(tmp_path / "ui.png"), full_page=True)
        finally:
            browser.close()
    assert (tmp_path / "ui.png").stat().st_size > 10_000
