"""The fast wire codec (`extender.api.wire`) on requests kube-scheduler's Go decoder would refuse."""

from __future__ import annotations

import orjson
import pytest

from extender.api import wire


@pytest.mark.parametrize("pods", [False, 0, "", {}], ids=["false", "zero", "empty string", "empty object"])
@pytest.mark.parametrize("key", ["NodeNameToMetaVictims", "NodeNameToVictims"])
def test_victims_pods_of_another_type_are_refused_even_when_empty(pods: object, key: str) -> None:
    """`Pods` is a list or null; an empty value of another type once read as no victims."""
    body = orjson.dumps({"Pod": {}, key: {"node-0": {"Pods": pods, "NumPDBViolations": 0}}})
    with pytest.raises(wire.WireError, match=rf"{key}\[node-0\]\.Pods must be a list or null"):
        wire.parse_preemption_args(body)


@pytest.mark.parametrize("pods", [None, []], ids=["null", "empty list"])
def test_victims_pods_null_or_empty_read_as_no_victims(pods: object) -> None:
    body = orjson.dumps({"Pod": {}, "NodeNameToMetaVictims": {"node-0": {"Pods": pods, "NumPDBViolations": 1}}})
    args = wire.parse_preemption_args(body)
    assert args.victims == {"node-0": []} and args.pdb_violations == {"node-0": 1}
