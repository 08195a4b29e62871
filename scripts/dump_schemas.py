"""Write tests/data/schemas/<name>.json: every `flow schema` output, as committed for tests/unit/cli/test_schema_dump.py.

Run only when a schema changes on purpose (say why in the commit): the dump is what run files written before hold to."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from openadapt_flow.cli.schema import SCHEMAS, schema_json

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "schemas"


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name in SCHEMAS:
        (OUT / f"{name}.json").write_text(json.dumps(schema_json(name), indent=2) + "\n")
    print(f"{len(SCHEMAS)} schemas written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
