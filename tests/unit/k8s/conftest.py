"""Fixtures of the informer tests."""

from __future__ import annotations

import pytest

from tests.unit.k8s.fake_api import Recorder


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()
