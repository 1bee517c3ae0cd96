"""The command itself: `--version`."""

from __future__ import annotations

import pytest

from extender import __version__
from extender.__main__ import main


def test_version_prints_the_package_version_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"tfjob-extender {__version__}\n"
