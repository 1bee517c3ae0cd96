"""`/metrics`' body: what `generate_latest` writes, rendered once for every request that arrives before a
render starts, and never more often than `METRICS_RENDER_EVERY_S`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from extender.api import exposition
from extender.api.exposition import Exposition

RENDER_EVERY_S = 0.2


class CountedCollects(Collector):
    def __init__(self) -> None:
        self.collects = 0

    def collect(self) -> Iterator[Metric]:
        self.collects += 1
        yield GaugeMetricFamily("tfjob_extender_test_collects", "Collects so far.", value=self.collects)


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> tuple[CollectorRegistry, CountedCollects]:
    monkeypatch.setattr(exposition, "METRICS_RENDER_EVERY_S", RENDER_EVERY_S)
    registry = CollectorRegistry()
    Counter("tfjob_extender_test_total", "A counter.", ["verb"], registry=registry).labels("filter").inc()
    counted = CountedCollects()
    registry.register(counted)
    return registry, counted


def test_the_exposition_is_what_generate_latest_writes(registry: tuple[CollectorRegistry, CountedCollects]) -> None:
    metrics, counted = registry
    rendered = asyncio.run(Exposition(metrics).latest())
    counted.collects -= 1
    assert rendered == generate_latest(metrics)


def test_requests_share_a_render_and_a_later_one_waits_for_the_next(
    registry: tuple[CollectorRegistry, CountedCollects],
) -> None:
    metrics, counted = registry

    async def scrapes() -> tuple[list[bytes], bytes, float]:
        shared = Exposition(metrics)
        together = await asyncio.gather(*(shared.latest() for _ in range(5)))
        asked = time.monotonic()
        later = await shared.latest()
        return list(together), later, time.monotonic() - asked

    together, later, waited_s = asyncio.run(scrapes())
    assert counted.collects == 2
    assert len(set(together)) == 1 and b"tfjob_extender_test_collects 1.0" in together[0]
    assert b"tfjob_extender_test_collects 2.0" in later
    assert waited_s >= RENDER_EVERY_S * 0.9
