"""Generate the JSON Schemas of ``schema/`` from the pydantic models.

- ``audit-spec.schema.json``: the audit spec (:mod:`compiler.spec`);
- ``<name>.schema.json`` for each artifact of :data:`compiler.artifacts.ARTIFACTS` (``lock``, ``plan``,
  ``run``, ``manifest``, ...): ``<spec>.lock.json``, ``<spec>.plan.json``, a run folder's ``run.json``,
  ``manifest.json``, ...

Run ``python -m compiler.schema`` after changing :mod:`compiler.spec` or :mod:`compiler.artifacts`;
a test fails when a committed file drifts from the models. ``audit schema [NAME]`` prints the same
schemas, generated from the models at the time, so an installed wheel needs no file of ``schema/``.

Ids: each schema's ``$id`` is a stable URN, ``urn:audit-compiler:schema:<name>:<major>`` (e.g.
``urn:audit-compiler:schema:audit-spec:1``, ``urn:audit-compiler:schema:lock:1``). It names no host
(nothing has to be served for an editor or a validator to use it) and no file name, so it stays the
same wherever the schema is stored. ``<major>`` is the MAJOR of the artifact's ``schema_version``
(:mod:`compiler.artifacts`): a change that a reader of the previous major cannot read bumps it and
gives a new id, while a minor change (a new optional field) keeps it. The spec has no
``schema_version``; its major is 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from compiler.artifacts import ARTIFACTS, json_schema
from compiler.errors import AuditError
from compiler.spec import AuditSpec

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schema"
#: Prefix of every schema's ``$id``: ``urn:audit-compiler:schema:<name>:<major>`` (see the module docstring).
SCHEMA_BASE = "urn:audit-compiler:schema:"
#: The spec's schema major (the spec has no ``schema_version``).
SPEC_SCHEMA_MAJOR = 1
SPEC_SCHEMA_ID = f"{SCHEMA_BASE}audit-spec:{SPEC_SCHEMA_MAJOR}"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
#: ``audit schema NAME``: the spec's name (the default); the others are the artifacts' (``ARTIFACTS``).
SPEC_NAME = "spec"
#: File name in ``schema/`` of the spec's schema.
SPEC_FILE = "audit-spec.schema.json"

MSG_UNKNOWN_SCHEMA = "no schema {name!r}; the schemas are: {names}"


def schema_id(name: str, major: int | str) -> str:
    """The stable ``$id`` of a schema: ``urn:audit-compiler:schema:<name>:<major>``."""
    return f"{SCHEMA_BASE}{name}:{major}"


def artifact_major(name: str) -> str:
    """MAJOR of an artifact's current ``schema_version`` (``"1.1"`` -> ``"1"``)."""
    return str(ARTIFACTS[name].model_fields["schema_version"].default).split(".")[0]


def spec_schema() -> dict:
    """JSON Schema (draft 2020-12) of the audit spec, keys written by alias (``pass``)."""
    schema = AuditSpec.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": DRAFT, "$id": SPEC_SCHEMA_ID, **schema}


def artifact_schema(name: str) -> dict:
    """JSON Schema (draft 2020-12) of one artifact of ``ARTIFACTS`` (``lock``, ``plan``, ``run``,
    ``manifest``, ...)."""
    return {"$schema": DRAFT, "$id": schema_id(name, artifact_major(name)), **json_schema(ARTIFACTS[name])}


def schema_names() -> tuple[str, ...]:
    """The names ``audit schema`` accepts: ``spec`` first, then every artifact of ``ARTIFACTS``."""
    return (SPEC_NAME, *ARTIFACTS)


def file_name(name: str) -> str:
    """File name in ``schema/`` of the schema ``name`` (``spec`` -> ``audit-spec.schema.json``)."""
    return SPEC_FILE if name == SPEC_NAME else f"{name}.schema.json"


def schema_for(name: str) -> dict:
    """The schema ``audit schema NAME`` prints, generated from the models.

    Raises
    ------
    AuditError
        ``name`` is not one of :func:`schema_names` (``MSG_UNKNOWN_SCHEMA``, exit 2).
    """
    if name == SPEC_NAME:
        return spec_schema()
    if name in ARTIFACTS:
        return artifact_schema(name)
    raise AuditError(MSG_UNKNOWN_SCHEMA.format(name=name, names=", ".join(schema_names())))


def schemas() -> dict[str, dict]:
    """Every schema file of ``schema/``: file name -> schema."""
    return {file_name(name): schema_for(name) for name in schema_names()}


def render(schema: dict) -> str:
    """The text of a schema file: indented JSON, keys sorted, a final newline."""
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
