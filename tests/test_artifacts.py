"""Typed, versioned artifacts and the methods version (issue 11, part 1).

- the JSON Schemas in schema/ match the models (drift), and the lock, plan, run.json and manifest.json
  of a fresh signed run validate against them with jsonschema;
- a schema 1.0 lock (no methods_version) is still read, as methods version 1; an unknown major
  version of any artifact is refused naming the file, the version found and the versions read;
- a newer methods version refuses an older lock (execute and compile, exit 3) until it is re-locked
  with --amend --reason, which the lock's amendment chain, the manifest and the report then show;
- CHANGELOG.md lists exactly the methods versions of compiler.methods.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import jsonschema
import pytest

from compiler import methods
from compiler.artifacts import (LOCK_SCHEMA_VERSION, MANIFEST_SCHEMA_VERSION, PLAN_SCHEMA_VERSION,
                                RUN_SCHEMA_VERSION, ArtifactError, ArtifactVersionError, LockVersionError,
                                read_manifest, read_plan, read_run_record)
from compiler.errors import LockError
from compiler.lock import read_lock
from compiler.schema import SCHEMA_DIR, schemas
from conftest import REPO, TINY_SCORES, TINY_SPEC, run_cli

ARTIFACT_SCHEMAS = ("lock", "plan", "run", "manifest")


def _schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())


def _validate(doc: dict, name: str) -> None:
    jsonschema.Draft202012Validator(_schema(name)).validate(doc)


def test_every_schema_file_is_generated():
    """(The drift of each file is checked by tests/test_lock.py::test_schema_matches_models.)"""
    assert {p.name for p in SCHEMA_DIR.glob("*.json")} == set(schemas())


# ------------------------------------------------------------------------------------ a fresh run

@pytest.fixture(scope="module")
def fresh_run(tmp_path_factory):
    """A signed run of the tiny precomputed spec through the CLI: (spec folder, run folder)."""
    from runtime.provenance.keygen import keygen

    work = tmp_path_factory.mktemp("fresh")
    kd = work / "keys"
    keygen(kd, signer="Schema Tester", organisation="Acme Audits")
    (work / "spec.yaml").write_text(TINY_SPEC)
    (work / "scores.csv").write_text(TINY_SCORES)
    proc = run_cli("compile", "spec.yaml", cwd=work)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(kd), cwd=work)
    assert proc.returncode == 0, proc.stderr
    return work, next((work / "reports" / "tiny-audit").iterdir())


def test_the_artifacts_of_a_fresh_run_validate_against_their_schemas(fresh_run):
    work, run_dir = fresh_run
    docs = {"lock": json.loads((work / "spec.lock.json").read_text()),
            "plan": json.loads((work / "spec.plan.json").read_text()),
            "run": json.loads((run_dir / "run.json").read_text()),
            "manifest": json.loads((run_dir / "manifest.json").read_text())}
    for name, doc in docs.items():
        _validate(doc, name)
    # and the schema is not vacuous: a wrong type or a missing field fails
    with pytest.raises(jsonschema.ValidationError):
        _validate({**docs["run"], "status": "paused"}, "run")
    with pytest.raises(jsonschema.ValidationError):
        _validate({k: v for k, v in docs["lock"].items() if k != "spec_digest"}, "lock")
    # version, tool, UTC time and run id on each
    lock, plan, run, manifest = docs["lock"], docs["plan"], docs["run"], docs["manifest"]
    assert (lock["schema_version"], plan["schema_version"], run["schema_version"], manifest["schema_version"]) == (
        LOCK_SCHEMA_VERSION, PLAN_SCHEMA_VERSION, RUN_SCHEMA_VERSION, MANIFEST_SCHEMA_VERSION) == ("1.1",) * 4
    for doc in docs.values():
        assert doc["tool"]["name"] == "audit-compiler" and doc["tool"]["version"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc["generated_at"])
    assert run["run_id"] == manifest["run_id"] == run_dir.name
    assert lock["methods_version"] == run["methods_version"] == manifest["methods_version"] \
        == manifest["lock"]["methods_version"] == methods.METHODS_VERSION
    assert run["status"] == manifest["status"] == "done" and run["signed"] is True
    # the key order of the files as before: the new keys are added, none moved
    assert list(lock)[:14] == ["schema_version", "kind", "tool", "audit", "spec_file", "spec_digest", "seed",
                               "thresholds", "models", "versions", "plan_digest", "created_at", "amendments",
                               "resolved_spec"]
    assert list(run)[:3] == ["schema_version", "kind", "run_id"]
    # the readers accept them
    assert read_run_record(run_dir / "run.json").status == "done"
    assert read_manifest(run_dir / "manifest.json").lock.methods_version == methods.METHODS_VERSION
    assert [t.id for t in read_plan(work / "spec.plan.json").tasks] == [t["id"] for t in plan["tasks"]]


def test_a_fresh_run_still_verifies(fresh_run):
    work, run_dir = fresh_run
    proc = run_cli("verify", str(run_dir), "--key-dir", str(work / "keys"), cwd=work)
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------------- version reading

def _as_1_0(lock: dict) -> dict:
    """A lock as issues 1-10 wrote it: schema 1.0, no generated_at, no methods_version."""
    return {**{k: v for k, v in lock.items() if k not in ("generated_at", "methods_version")},
            "schema_version": "1.0"}


def test_a_1_0_lock_is_read_as_methods_version_1(write_spec, tmp_path):
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    path = tmp_path / "spec.lock.json"
    path.write_text(json.dumps(_as_1_0(json.loads(path.read_text())), indent=2) + "\n")
    lock = read_lock(tmp_path / "spec.yaml", "spec.yaml")
    assert lock["schema_version"] == "1.0" and lock["methods_version"] == 1
    assert "generated_at" not in lock
    # under a later methods version recompiling refuses and leaves it alone; the amendment re-locks it
    before = path.read_bytes()
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 3 and "made under methods version 1" in proc.stderr, proc.stderr
    assert path.read_bytes() == before
    proc = run_cli("compile", "spec.yaml", "--amend", "--reason", "adopt the current methods", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lock = json.loads(path.read_text())
    assert lock["schema_version"] == LOCK_SCHEMA_VERSION and lock["methods_version"] == methods.METHODS_VERSION
    assert lock["amendments"][0]["previous"]["methods_version"] == 1
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((tmp_path / "reports" / "tiny-audit").iterdir())
    assert json.loads((run_dir / "run.json").read_text())["methods_version"] == methods.METHODS_VERSION
    assert json.loads((run_dir / "manifest.json").read_text())["lock"]["methods_version"] == methods.METHODS_VERSION


UNKNOWN_MAJOR_LOCK = (
    "error: spec.lock.json: this lock has schema_version '2.0', which audit-compiler {tool} cannot read (it reads "
    "schema versions 1.x; the file was written by audit-compiler 9.0.0). Use the audit-compiler version that "
    "wrote it.\n"
)


def test_an_unknown_major_version_is_refused_naming_file_and_versions(write_spec, tmp_path):
    from compiler.artifacts import tool_version

    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    path = tmp_path / "spec.lock.json"
    lock = json.loads(path.read_text())
    path.write_text(json.dumps({**lock, "schema_version": "2.0", "tool": {"name": "audit-compiler",
                                                                          "version": "9.0.0"}}))
    before = path.read_bytes()
    for cmd in (("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet"), ("compile", "spec.yaml")):
        proc = run_cli(*cmd, cwd=tmp_path)
        assert proc.returncode == 3, proc.stderr
        # (execute warns first that the run would be unsigned: no keys in this test)
        assert proc.stderr.endswith(UNKNOWN_MAJOR_LOCK.format(tool=tool_version())), proc.stderr
        assert "Traceback" not in proc.stderr
    assert path.read_bytes() == before  # compile never overwrites a lock it cannot read
    with pytest.raises(LockVersionError) as info:
        read_lock(tmp_path / "spec.yaml", "spec.yaml")
    assert isinstance(info.value, LockError) and info.value.exit_code == 3
    assert info.value.found == "2.0" and info.value.supported == ("1",)


def test_run_record_and_manifest_readers(fresh_run, tmp_path):
    _, run_dir = fresh_run
    for name, reader, what in (("run.json", read_run_record, "run record (run.json)"),
                               ("manifest.json", read_manifest, "manifest")):
        doc = json.loads((run_dir / name).read_text())
        bad = tmp_path / name
        bad.write_text(json.dumps({**doc, "schema_version": "3.1"}))
        with pytest.raises(ArtifactVersionError) as info:
            reader(bad)
        assert str(info.value).startswith(f"{bad}: this {what} has schema_version '3.1', which audit-compiler ")
        assert "(it reads schema versions 1.x; the file was written by audit-compiler " in str(info.value)
        assert info.value.path == str(bad) and info.value.found == "3.1"
        # a later minor version is read, its new fields kept
        bad.write_text(json.dumps({**doc, "schema_version": "1.7", "new_field": [1]}))
        assert reader(bad).dump()["new_field"] == [1]
        # a 1.0 file (before tool/generated_at were required of every artifact) is read
        bad.write_text(json.dumps({**{k: v for k, v in doc.items() if k != "methods_version"},
                                   "schema_version": "1.0"}))
        assert reader(bad).methods_version == 1
        for broken in ("{", json.dumps({**doc, "kind": "audit-lock"}), json.dumps({**doc, "seed": "seven"})):
            bad.write_text(broken)
            with pytest.raises(ArtifactError) as info:
                reader(bad)
            assert not isinstance(info.value, ArtifactVersionError) and str(info.value).startswith(f"{bad}: ")


def test_the_run_record_takes_the_fields_of_resume(fresh_run):
    from compiler.artifacts import dump_run_record

    _, run_dir = fresh_run
    run = json.loads((run_dir / "run.json").read_text())
    extra = {"status": "interrupted", "stage": "score", "pid": 4242, "host": "worker-1",
             "resumed": [{"at": "2026-12-01T02:00:00Z", "previous_status": "interrupted"}],
             "reused_tasks": ["score-0123456789abcdef"], "store": ".audit-store"}
    out = dump_run_record({**run, **extra})
    assert {k: out[k] for k in extra} == extra
    assert [k for k in out if k in run] == list(run)  # the existing keys keep their order
    _validate(out, "run")
    with pytest.raises(ArtifactError):
        dump_run_record({**run, "status": "paused"})


# --------------------------------------------------------------------------------- methods version

V2_CHANGE = "test: the BH family now spans every system of the run"


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    """The ``audit`` entry point in this process (so that a monkeypatched methods version applies)."""
    from runtime.cli import main

    with pytest.raises(SystemExit) as info:
        main(list(args))
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


METHODS_EXECUTE_REFUSAL = """\
error: the lock spec.lock.json was made under methods version 1; this audit-compiler ({tool}) implements \
methods version 2, and its results can differ under the same spec digest. Changes between them:
  - version 2: {change}
  Re-lock the spec under methods version 2 on purpose (the upgrade is kept in the lock as an amendment and \
listed in every report):
  audit compile spec.yaml --amend --reason "why"
"""

METHODS_COMPILE_REFUSAL = """\
error: the lock spec.lock.json was made under methods version 1; this audit-compiler ({tool}) implements \
methods version 2. Changes between them:
  - version 2: {change}
  Re-locking under another methods version is an amendment, kept in the lock and listed in every report. \
Amend on purpose with
  audit compile spec.yaml --amend --reason "why the methods change is accepted"
"""


def test_a_newer_methods_version_refuses_an_older_lock_until_amended(write_spec, tmp_path, monkeypatch, capsys):
    from compiler.artifacts import tool_version

    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AUDIT_KEY_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-keys"))  # an unsigned run
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(methods, "METHODS_VERSION", 1)  # the release that made the lock
    code, _, err = _cli(capsys, "compile", "spec.yaml")
    assert code == 0, err
    lock_file = tmp_path / "spec.lock.json"
    first = json.loads(lock_file.read_text())
    assert first["methods_version"] == 1

    monkeypatch.setattr(methods, "METHODS_VERSION", 2)
    monkeypatch.setitem(methods.CHANGES, 2, V2_CHANGE)
    locked = lock_file.read_bytes()
    # execute refuses, naming both versions, the changes between them and the command that re-locks
    code, _, err = _cli(capsys, "execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet")
    assert code == 3
    assert err.endswith(METHODS_EXECUTE_REFUSAL.format(tool=tool_version(), change=V2_CHANGE)), err
    assert not (tmp_path / "reports").exists()
    # compile of the unchanged spec refuses too, and leaves the lock alone
    code, _, err = _cli(capsys, "compile", "spec.yaml")
    assert code == 3
    refusal = "\n".join(ln for ln in err.splitlines() if not ln.startswith("warning: ")) + "\n"  # (no source block)
    assert refusal == METHODS_COMPILE_REFUSAL.format(tool=tool_version(), change=V2_CHANGE), err
    assert lock_file.read_bytes() == locked

    # the amendment re-locks under version 2 and keeps the version 1 entry
    code, out, err = _cli(capsys, "compile", "spec.yaml", "--amend", "--reason", "adopt methods version 2")
    assert code == 0, err
    assert "amendment 1 of the lock (reason: adopt methods version 2); changed keys:" in out
    assert "  - methods_version: 1 -> 2" in out
    lock = json.loads(lock_file.read_text())
    assert lock["methods_version"] == 2 and lock["spec_digest"] == first["spec_digest"]
    (amendment,) = lock["amendments"]
    assert amendment["changes"] == ["methods_version: 1 -> 2"]
    assert amendment["reason"] == "adopt methods version 2"
    assert amendment["previous"]["methods_version"] == 1
    assert amendment["previous"]["created_at"] == first["created_at"]
    _validate(lock, "lock")
    code, out, err = _cli(capsys, "compile", "spec.yaml")
    assert code == 0 and "unchanged" in out, err

    # now execute runs, and the run records the upgrade
    code, out, err = _cli(capsys, "execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet")
    assert code == 0, err
    run_dir = next((tmp_path / "reports" / "tiny-audit").iterdir())
    run = json.loads((run_dir / "run.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert run["methods_version"] == manifest["methods_version"] == manifest["lock"]["methods_version"] == 2
    assert manifest["lock"]["amendments"][0]["changes"] == ["methods_version: 1 -> 2"]
    page = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", (run_dir / "report.html").read_text())))
    assert "Amendment 1 reason adopt methods version 2" in page
    assert "changed keys methods_version: 1 -> 2" in page


def test_a_1_0_lock_under_a_newer_methods_version_is_refused(write_spec, tmp_path, monkeypatch):
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    path = tmp_path / "spec.lock.json"
    path.write_text(json.dumps(_as_1_0(json.loads(path.read_text()))))
    from compiler import compile_spec
    from compiler.lock import check_lock

    monkeypatch.setattr(methods, "METHODS_VERSION", 2)
    monkeypatch.setitem(methods.CHANGES, 2, V2_CHANGE)
    lock = read_lock(tmp_path / "spec.yaml", "spec.yaml")
    with pytest.raises(LockError, match=r"made under methods version 1; .* implements methods version 2"):
        check_lock(lock, compile_spec(tmp_path / "spec.yaml").resolved, "spec.yaml")


def test_changes_between_methods_versions(monkeypatch):
    monkeypatch.setattr(methods, "CHANGES", {1: "first", 2: "second", 3: "third"})
    assert methods.changes_between(1, 3) == [(2, "second"), (3, "third")]
    assert methods.changes_between(3, 2) == [(3, "third")]
    assert methods.changes_between(2, 2) == []


def test_changelog_lists_exactly_the_methods_versions():
    text = (REPO / "CHANGELOG.md").read_text()
    section = text.split("## Methods versions", 1)[1].split("\n## ", 1)[0]
    entries = {int(v): line.strip() for v, line in re.findall(r"^- \*\*(\d+)\*\*: (.+)$", section, re.M)}
    assert entries == methods.CHANGES
    assert max(methods.CHANGES) == methods.METHODS_VERSION
    assert methods.CHANGES[1] == "the methods of the seeds as first implemented"


def test_the_shipped_schemas_name_their_artifacts():
    for name in ARTIFACT_SCHEMAS:
        schema = _schema(name)
        assert schema["$id"] == f"urn:audit-compiler:schema:{name}:1"  # stable, MAJOR of schema_version
        assert {"schema_version", "kind", "tool", "generated_at"} <= set(schema["properties"])
    assert "run_id" in _schema("run")["required"] and "run_id" in _schema("manifest")["required"]
    assert Path(SCHEMA_DIR / "audit-spec.schema.json").exists()


def test_a_methods_6_lock_is_refused_by_methods_7_naming_both_and_the_interval_statuses(write_spec, tmp_path,
                                                                                       monkeypatch, capsys):
    """Issue 29: statuses from intervals, evidence before naming and the per-system hierarchy change results
    under the same spec digest, so a lock made under methods 6 exits 3 until re-locked with --amend --reason."""
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AUDIT_KEY_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-keys"))
    monkeypatch.setenv("COLUMNS", "200")
    assert methods.METHODS_VERSION >= 7
    monkeypatch.setattr(methods, "METHODS_VERSION", 6)
    code, _, err = _cli(capsys, "compile", "spec.yaml")
    assert code == 0, err
    monkeypatch.setattr(methods, "METHODS_VERSION", 7)
    code, _, err = _cli(capsys, "execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet")
    assert code == 3 and "made under methods version 6" in err and "implements methods version 7" in err
    assert "  - version 7: decisions from evidence (issue 29)" in err and "Traceback" not in err
    assert not (tmp_path / "reports").exists()
    code, _, err = _cli(capsys, "compile", "spec.yaml", "--amend", "--reason", "interval statuses accepted")
    assert code == 0, err
    assert json.loads((tmp_path / "spec.lock.json").read_text())["methods_version"] == 7
