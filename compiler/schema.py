"""Generate ``schema/audit-spec.schema.json`` from the pydantic models.

Run ``python -m compiler.schema`` after changing :mod:`compiler.spec`; a test fails when the committed
file drifts from the models.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from compiler.spec import AuditSpec

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schema"
SPEC_SCHEMA_ID = "https://audit-compiler.invalid/schema/audit-spec.schema.json"


def spec_schema() -> dict:
    """JSON Schema (draft 2020-12) of the audit spec, keys written by alias (``pass``)."""
    schema = AuditSpec.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SPEC_SCHEMA_ID, **schema}


def render(schema: dict) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    SCHEMA_DIR.mkdir(exist_ok=True)
    out = SCHEMA_DIR / "audit-spec.schema.json"
    out.write_text(render(spec_schema()), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
