"""Writes what the settings' declarations print: `docs/settings.md` (every setting with its flag, config file
key, unit, range, default and help) and the `policy` and `settings` parts of the chart's
`values.schema.json`. Run it after declaring, renaming or changing a setting:

    .venv/bin/python hack/generate_settings.py

`tests/unit/config/test_generated.py` fails while either file differs from what this writes.
"""

from __future__ import annotations

import json
from pathlib import Path

from extender.config.documents import settings_reference, values_schema

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "docs" / "settings.md"
VALUES_SCHEMA = REPO / "charts" / "tfjob-extender" / "values.schema.json"


def schema_text(committed: str) -> str:
    """The chart's values schema, as committed, with the settings' parts made from the declarations."""
    return json.dumps(values_schema(json.loads(committed)), indent=2) + "\n"


def main() -> None:
    REFERENCE.write_text(settings_reference())
    VALUES_SCHEMA.write_text(schema_text(VALUES_SCHEMA.read_text()))


if __name__ == "__main__":
    main()
