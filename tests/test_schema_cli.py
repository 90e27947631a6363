"""``audit schema`` (issue 26 §3): the schemas generated from the models, with stable ids.

``audit schema`` prints the spec's schema, byte for byte the committed ``schema/audit-spec.schema.json``
(whose drift from the models tests/test_lock.py::test_schema_matches_models checks); every name prints
its file; every shipped spec validates against it with jsonschema, and a spec with an unknown key does
not.
"""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
from ruamel.yaml import YAML

from compiler.artifacts import ARTIFACTS
from compiler.schema import MSG_UNKNOWN_SCHEMA, SCHEMA_DIR, file_name, schema_names
from conftest import REPO, run_cli
from runtime.cli import main


def _print(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out = capsys.readouterr()
    return done.value.code, out.out, out.err


def test_audit_schema_prints_the_committed_spec_schema(tmp_path):
    proc = run_cli("schema", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (SCHEMA_DIR / "audit-spec.schema.json").read_text()
    assert json.loads(proc.stdout)["$id"] == "urn:audit-compiler:schema:audit-spec:1"
    assert list(tmp_path.iterdir()) == []  # prints, writes nothing


def test_each_name_prints_its_file(capsys):
    """`audit schema NAME` for the spec and every artifact of ARTIFACTS (summary included once it is there)."""
    assert schema_names() == ("spec", *ARTIFACTS)
    assert {"lock", "plan", "run", "manifest"} <= set(ARTIFACTS)
    for name in schema_names():
        code, out, err = _print(capsys, "schema", name)
        assert (code, err) == (0, "")
        assert out == (SCHEMA_DIR / file_name(name)).read_text(), name
    assert file_name("spec") == "audit-spec.schema.json" and file_name("lock") == "lock.schema.json"


def test_the_ids_are_stable_urns_with_the_schema_major():
    for name in schema_names():
        schema = json.loads((SCHEMA_DIR / file_name(name)).read_text())
        if name == "spec":
            assert schema["$id"] == "urn:audit-compiler:schema:audit-spec:1"
            continue
        major = ARTIFACTS[name].model_fields["schema_version"].default.split(".")[0]
        assert schema["$id"] == f"urn:audit-compiler:schema:{name}:{major}"
    assert json.loads((SCHEMA_DIR / "lock.schema.json").read_text())["$id"] == "urn:audit-compiler:schema:lock:1"


def test_an_unknown_name_lists_the_names(capsys, tmp_path):
    proc = run_cli("schema", "nope", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    names = ", ".join(("spec", *ARTIFACTS))
    assert proc.stderr == f"error: {MSG_UNKNOWN_SCHEMA.format(name='nope', names=names)}\n"
    assert proc.stderr.startswith("error: no schema 'nope'; the schemas are: spec, lock, plan, run, manifest")


def _spec_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / "audit-spec.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _load(path) -> dict:
    # dates (source.exported) as the strings JSON carries
    return json.loads(json.dumps(YAML(typ="safe").load(path.read_text()), default=str))


def test_every_shipped_spec_validates_against_the_schema():
    validator = _spec_validator()
    specs = sorted((REPO / "specs").glob("*.yaml"))
    assert len(specs) >= 6
    for path in specs:
        errors = [e.message for e in validator.iter_errors(_load(path))]
        assert errors == [], f"{path.name}: {errors}"


def test_a_spec_with_an_unknown_key_does_not_validate():
    validator = _spec_validator()
    spec = _load(REPO / "specs" / "example.yaml")
    assert validator.is_valid(spec)
    top = {**copy.deepcopy(spec), "colour": "blue"}
    errors = list(validator.iter_errors(top))
    assert [e.message for e in errors] == ["Additional properties are not allowed ('colour' was unexpected)"]
    nested = copy.deepcopy(spec)
    nested["systems"][0]["modle"] = "all-MiniLM-L6-v2"  # a misspelt key inside a block
    assert not validator.is_valid(nested)
    deep = copy.deepcopy(spec)
    deep["analysis"]["k"]["merrit"] = 10
    errors = list(validator.iter_errors(deep))
    assert len(errors) == 1 and list(errors[0].absolute_path) == ["analysis", "k"]
    assert "'merrit' was unexpected" in errors[0].message
