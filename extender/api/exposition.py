"""`GET /metrics`' body: rendered in steps, and at most once every `METRICS_RENDER_EVERY_S`.

Prometheus scrapes every 15 to 30 seconds and finds the exposition rendered for it at once. Anything that
asks more often waits for the next render, which starts `METRICS_RENDER_EVERY_S` after the last one did
and is shared by every request that arrives before it starts: however many ask, the process renders once
a second at most, and every answer was rendered after its request arrived. A render walks the registry
one metric family at a time, handing the event loop back between them (a family's collector may read the
model: the pending gangs). The text is what `prometheus_client.generate_latest` writes, family by family.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from prometheus_client import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector, CollectorRegistry

from extender.api.pacing import Steps, in_steps

METRICS_RENDER_EVERY_S = 1.0
"""Least time between the starts of two renders of the exposition, seconds."""


class OneFamily(Collector):
    """One collected metric family, as a collector `generate_latest` can render."""

    def __init__(self, family: Metric) -> None:
        self.family = family

    def collect(self) -> Iterable[Metric]:
        return (self.family,)


def exposition_steps(registry: CollectorRegistry) -> Steps[bytes]:
    """The registry's exposition, one metric family per step at most."""
    rendered: list[bytes] = []
    for family in registry.collect():
        rendered.append(generate_latest(OneFamily(family)))
        yield None
    return b"".join(rendered)


class Exposition:
    """The renders of one registry's exposition: the next one, shared by every request that arrives before
    it starts, and when the last one started."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.next_render: asyncio.Task[bytes] | None = None
        self.last_started = float("-inf")

    async def latest(self) -> bytes:
        """An exposition rendered after this call began."""
        if self.next_render is None:
            self.next_render = asyncio.get_running_loop().create_task(self._render_when_due())
        return await asyncio.shield(self.next_render)

    async def _render_when_due(self) -> bytes:
        await asyncio.sleep(max(0.0, self.last_started + METRICS_RENDER_EVERY_S - time.monotonic()))
        self.next_render = None
        self.last_started = time.monotonic()
        return await in_steps(exposition_steps(self.registry))
