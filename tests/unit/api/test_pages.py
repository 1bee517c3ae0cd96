"""The page's document and HTML: made once per model generation and served again for `PAGE_REUSE_S`, made
again once the model changes or that time has passed, the same as made whole."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from extender.api import ui
from extender.api.app import make_service
from extender.api.page_model import PageLimits, page_model_steps, scale_bands
from extender.api.ui import VIEW_JSON, Pages
from extender.config import Settings
from extender.policy.core.stepwise import run_whole
from extender.state.kinds import Kind
from tests.builders import cluster, make_node, make_pod, make_podgroup, make_tfjob, tfjob_pods

NOW = 1_800_000_000.0


@pytest.fixture
def pages() -> Pages:
    state = cluster(
        *(make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(3)),
        *tfjob_pods("mnist", ps=1, workers=4, cpu="1", memory="2Gi"),
        make_podgroup("mnist", min_member=5),
        make_tfjob("mnist", workers=4),
    )
    return Pages(make_service(Settings(), state, lambda: NOW), PageLimits())


def test_one_model_generation_is_made_into_a_page_once(pages: Pages) -> None:
    html = run_whole(pages.body_steps("ui_main.html"))
    made = pages.latest
    assert made is not None and b"Queue, in rank order" in html
    assert run_whole(pages.body_steps("ui_main.html")) is html
    view = orjson.loads(run_whole(pages.body_steps(VIEW_JSON)))
    assert pages.latest is made
    assert view == orjson.loads(orjson.dumps(run_whole(page_model_steps(pages.service, PageLimits()))))


def test_a_changed_model_or_an_old_page_is_made_again(pages: Pages, monkeypatch: pytest.MonkeyPatch) -> None:
    run_whole(pages.body_steps(VIEW_JSON))
    first = pages.latest
    pages.service.state.apply(Kind.POD, "ADDED", make_pod("solo", cpu="1"))
    run_whole(pages.body_steps(VIEW_JSON))
    second = pages.latest
    assert (
        second is not first
        and first is not None
        and first.view == {key: value for key, value in first.view.items() if not isinstance(value, list) or not value}
    ), "the page it replaced was freed"
    monkeypatch.setattr(ui, "PAGE_REUSE_S", 0.0)
    run_whole(pages.body_steps(VIEW_JSON))
    assert pages.latest is not second


def test_the_queue_bands_share_one_scale() -> None:
    def row(p10: float, p50: float, p90: float | None) -> dict[str, Any]:
        forecast = {"p10Seconds": p10, "p50Seconds": p50, "p90Seconds": p90, "unknown": None}
        return {"startForecast": forecast}

    unknown: dict[str, Any] = {"startForecast": {"unknown": "fewer than 3 jobs seen finish (0): no run times to go by"}}
    queue: list[dict[str, Any]] = [
        row(0.0, 60.0, 120.0),
        row(120.0, 240.0, 600.0),
        row(100.0, 150.0, None),
        unknown,
        {"startForecast": None},
    ]
    scale_bands(queue)
    assert queue[0]["band"] == {"left": 0.0, "width": 20.0, "middle": 10.0}
    assert queue[1]["band"] == {"left": 20.0, "width": 80.0, "middle": 40.0}
    assert queue[2]["band"] == {"left": 16.7, "width": 33.3, "middle": 25.0}
    assert "band" not in queue[3] and "band" not in queue[4]
