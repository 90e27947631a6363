"""Generate the JSON Schemas of ``schema/`` from the pydantic models.

- ``audit-spec.schema.json``: the audit spec (:mod:`compiler.spec`);
- ``lock.schema.json``, ``plan.schema.json``, ``run.schema.json``, ``manifest.schema.json``: the
  artifacts (:mod:`compiler.artifacts`): ``<spec>.lock.json``, ``<spec>.plan.json``, a run folder's
  ``run.json`` and ``manifest.json``.

Run ``python -m compiler.schema`` after changing :mod:`compiler.spec` or :mod:`compiler.artifacts`;
a test fails when a committed file drifts from the models.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from compiler.artifacts import ARTIFACTS, json_schema
from compiler.spec import AuditSpec

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schema"
SCHEMA_BASE = "https://audit-compiler.invalid/schema/"
SPEC_SCHEMA_ID = SCHEMA_BASE + "audit-spec.schema.json"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def spec_schema() -> dict:
    """JSON Schema (draft 2020-12) of the audit spec, keys written by alias (``pass``)."""
    schema = AuditSpec.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": DRAFT, "$id": SPEC_SCHEMA_ID, **schema}


def artifact_schema(name: str) -> dict:
    """JSON Schema (draft 2020-12) of one artifact: ``lock``, ``plan``, ``run`` or ``manifest``."""
    return {"$schema": DRAFT, "$id": f"{SCHEMA_BASE}{name}.schema.json", **json_schema(ARTIFACTS[name])}


def schemas() -> dict[str, dict]:
    """Every schema file of ``schema/``: file name -> schema."""
    return {"audit-spec.schema.json": spec_schema(),
            **{f"{name}.schema.json": artifact_schema(name) for name in ARTIFACTS}}


def render(schema: dict) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    SCHEMA_DIR.mkdir(exist_ok=True)
    for name, schema in schemas().items():
        out = SCHEMA_DIR / name
        out.write_text(render(schema), encoding="utf-8")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
