"""The caps on a request head, as the parser hands its pieces over."""

from __future__ import annotations

import pytest

from extender.api.edge.head import HeadMeter, HeadRefused
from extender.config import ListenerLimits

LIMITS = ListenerLimits(max_line_bytes=100, max_head_bytes=250, max_headers=3)


def refusal(*headers: tuple[bytes, bytes]) -> HeadRefused:
    with pytest.raises(HeadRefused) as refused:
        HeadMeter(LIMITS).count_headers(headers[:-1], headers[-1])
    return refused.value


def test_a_target_longer_than_a_line_is_a_414_however_it_arrives() -> None:
    meter = HeadMeter(LIMITS)
    meter.on_target(b"/" + b"x" * 60)
    with pytest.raises(HeadRefused) as refused:
        meter.on_target(b"y" * 60)
    assert refused.value.status == 414


def test_too_many_headers_a_long_header_line_or_a_large_head_are_431s() -> None:
    assert refusal(*[(b"a", b"b")] * 4).status == 431
    assert "header line" in refusal((b"a", b"v" * 96)).message
    assert "request head" in refusal((b"a", b"v" * 95), (b"b", b"v" * 95), (b"c", b"v" * 95)).message


def test_a_head_within_the_caps_is_counted() -> None:
    meter = HeadMeter(LIMITS)
    meter.on_target(b"/filter")
    meter.count_headers([(b"host", b"x"), (b"content-length", b"12")])
    assert (meter.headers, meter.header_bytes) == (2, 5 + 16 + 8)


def test_bytes_the_parser_still_holds_count_toward_the_head() -> None:
    meter = HeadMeter(LIMITS)
    meter.on_target(b"/")
    meter.check_total(200)
    with pytest.raises(HeadRefused):
        meter.check_total(260)
