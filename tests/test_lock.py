"""Compile writes a lock; execute refuses (exit 3) when the spec drifted, naming the changed keys."""

from __future__ import annotations

import json

import jsonschema
import pytest

from compiler import compile_spec
from compiler.hashing import canonical_json, digest
from compiler.lock import diff_paths
from compiler.schema import SCHEMA_DIR, render, schemas
from conftest import TINY_SCORES, TINY_SPEC, run_cli

#: Pinned: a change here means every existing lock stops matching. Change only on purpose.
TINY_SPEC_DIGEST = "ccccf362186524b7e9d3a75e22df9f9fd0573c9d525823dd4af28f4ea1eb6d11"


def test_schema_matches_models():
    """The spec's schema and the artifacts' (lock, plan, run, manifest: compiler.artifacts)."""
    for name, schema in schemas().items():
        committed = (SCHEMA_DIR / name).read_text()
        assert committed == render(schema), f"schema/{name} drifted: run `python -m compiler.schema` and commit"


def test_example_specs_validate_against_schema():
    """The shipped specs and every `audit init` starter validate against the published schema as an editor's
    YAML language server reads them: a date must be quoted, or YAML makes it a date, not the string the
    schema declares (`disclosure.aedt.distributed`, `score_file.exported`)."""
    from ruamel.yaml import YAML

    schema = json.loads((SCHEMA_DIR / "audit-spec.schema.json").read_text())
    starters = sorted((SCHEMA_DIR.parent / "runtime" / "init").glob("*/audit.yaml"))
    assert len(starters) >= 5
    for path in sorted((SCHEMA_DIR.parent / "specs").glob("*.yaml")) + starters:
        jsonschema.validate(YAML(typ="safe").load(path.read_text()), schema)


def test_canonical_json_is_rfc8785():
    # RFC 8785 §3.2.3: keys sorted by UTF-16 code units; numbers in ECMAScript form.
    assert canonical_json({"b": 1, "a": [1.0, 0.5, 1e21]}) == b'{"a":[1,0.5,1e+21],"b":1}'
    assert digest({}) == {"algorithm": "sha256",
                          "digest": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}


def test_spec_digest_is_pinned(write_spec):
    spec = write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    got = digest(compile_spec(spec).resolved)["digest"]
    assert got == TINY_SPEC_DIGEST


def test_execution_knobs_do_not_change_the_digest(write_spec):
    spec = write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    a = digest(compile_spec(spec).resolved)
    spec.write_text(spec.read_text() + "execution: {batch_size: 8, out: elsewhere}\n")
    assert digest(compile_spec(spec).resolved) == a


def test_compile_writes_lock(write_spec, tmp_path):
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lock = json.loads((tmp_path / "spec.lock.json").read_text())
    assert lock["spec_digest"] == {"algorithm": "sha256", "digest": TINY_SPEC_DIGEST}
    assert lock["seed"] == 7
    assert lock["thresholds"]["research"]["score_delta"] == {"pass": 0.03, "investigate": 0.05}
    assert lock["thresholds"]["research"]["marc"] == {"pass": 0.5, "investigate": 0.7}
    assert lock["thresholds"]["operational"]["score_delta"] == {"pass": 0.04, "investigate": 0.05}
    assert lock["models"][0]["fingerprint"]["algorithm"] == "sha256"
    assert lock["created_at"].endswith("Z")
    assert lock["versions"]["numpy"]
    plan = json.loads((tmp_path / "spec.plan.json").read_text())
    assert lock["plan_digest"] == digest([t["id"] for t in plan["tasks"]])
    assert [t["kind"] for t in plan["tasks"]] == ["score", "analyse", "report", "seal"]


def test_task_ids_are_deterministic(write_spec):
    spec = write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    a = compile_spec(spec).plan["tasks"]
    b = compile_spec(spec).plan["tasks"]
    assert [t["id"] for t in a] == [t["id"] for t in b]
    spec.write_text(spec.read_text().replace("seed: 7", "seed: 8"))
    c = compile_spec(spec).plan["tasks"]
    # a precomputed score does not depend on the seed; the analysis (bootstrap draws) does
    assert a[0]["id"] == c[0]["id"] and a[0]["kind"] == "score"
    assert a[1]["id"] != c[1]["id"] and a[1]["kind"] == "analyse"


def test_execute_without_lock_exits_3(write_spec, tmp_path):
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path)
    assert proc.returncode == 3
    assert "no lock at spec.lock.json" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("edit, key", [
    (("{pass: 0.03, investigate: 0.05}", "{pass: 0.04, investigate: 0.05}"), "thresholds.research.score_delta.pass"),
    (("seed: 7", "seed: 9"), "seed"),
])
def test_edit_after_compile_exits_3_naming_the_key(write_spec, tmp_path, edit, key):
    spec = write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    spec.write_text(spec.read_text().replace(*edit))
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert f"  - {key}: locked" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "reports").exists()


def test_editing_a_data_file_after_compile_is_a_mismatch(write_spec, tmp_path):
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    (tmp_path / "scores.csv").write_text(TINY_SCORES.replace("0.9,1", "0.95,1"))
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path)
    assert proc.returncode == 3
    assert "systems[0].data.sha256" in proc.stderr


def test_diff_paths():
    old = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    new = {"a": {"b": 2, "c": [1, 3]}, "e": 1}
    assert diff_paths(old, new) == [("a.b", 1, 2), ("a.c[1]", 2, 3), ("d", 1, "<absent>"), ("e", "<absent>", 1)]


def test_recompiling_an_unchanged_spec_keeps_the_lock(write_spec, tmp_path):
    write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    first = (tmp_path / "spec.lock.json").read_bytes()
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 0 and "unchanged" in proc.stdout
    assert (tmp_path / "spec.lock.json").read_bytes() == first


def test_output_root(write_spec, tmp_path):
    spec = write_spec(TINY_SPEC + "execution: {out: runs}\n", **{"scores.csv": TINY_SCORES})
    assert run_cli("compile", str(spec), cwd=tmp_path.parent).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", str(spec), "--quiet", cwd=tmp_path.parent)   # relative to the spec's folder
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "runs" / "tiny-audit").is_dir()
    (tmp_path / "afile").write_text("x")
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", "--out", "afile", cwd=tmp_path)
    assert proc.returncode == 2 and "cannot create the run folder under afile" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_recompiling_a_changed_spec_records_an_amendment(write_spec, tmp_path):
    spec = write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    first = json.loads((tmp_path / "spec.lock.json").read_text())
    spec.write_text(spec.read_text().replace("{pass: 0.03, investigate: 0.05}", "{pass: 0.04, investigate: 0.05}"))
    proc = run_cli("compile", "spec.yaml", "--amend", "--reason", "tier aligned with policy", cwd=tmp_path)
    assert proc.returncode == 0 and "amendment 1" in proc.stdout
    lock = json.loads((tmp_path / "spec.lock.json").read_text())
    (amendment,) = lock["amendments"]
    assert amendment["changes"] == ["thresholds.research.score_delta.pass: 0.03 -> 0.04"]
    assert amendment["previous"]["spec_digest"] == first["spec_digest"]
    assert amendment["previous"]["resolved_spec"] == first["resolved_spec"]
    assert run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path).returncode == 0
    html = next((tmp_path / "reports" / "tiny-audit").glob("*/report.html")).read_text()
    assert "Amendment 1" in html and "thresholds.research.score_delta.pass: 0.03 -&gt; 0.04" in html
    assert first["spec_digest"]["digest"] in html


def test_a_damaged_lock_is_never_replaced_by_compile(write_spec, tmp_path):
    """The lock is the pre-registration: compile refuses to overwrite one it cannot read (exit 3) and
    says how to restore it, instead of reporting it unchanged or locking anew without a word."""
    spec = write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    assert run_cli("compile", spec.name, cwd=tmp_path).returncode == 0
    lock = tmp_path / "spec.lock.json"
    for damaged in ("{", json.dumps({**json.loads(lock.read_text()), "schema_version": "abc"})):
        lock.write_text(damaged)
        proc = run_cli("compile", spec.name, cwd=tmp_path)
        assert proc.returncode == 3 and "exists but is unreadable" in proc.stderr, proc.stderr
        assert "git checkout -- spec.lock.json" in proc.stderr and "Traceback" not in proc.stderr
        assert lock.read_text() == damaged


def test_a_truncated_or_conflicted_lock_is_named_as_such_and_kept(write_spec, tmp_path):
    spec = write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})
    assert run_cli("compile", spec.name, cwd=tmp_path).returncode == 0
    lock = tmp_path / "spec.lock.json"
    good = lock.read_text()
    spec.write_text(spec.read_text().replace("seed: 7", "seed: 8"))  # a changed spec: compile would re-lock
    cases = {good[: len(good) // 2]: "it is truncated: the JSON stops at line",
             f"<<<<<<< HEAD\n{good}=======\n{good}>>>>>>> branch\n": "git merge-conflict markers"}
    for damaged, words in cases.items():
        lock.write_text(damaged)
        for command in ("compile", "execute"):
            proc = run_cli(command, spec.name, "-q", "--unsigned", "--no-pdf", cwd=tmp_path) if command == "execute" else \
                run_cli(command, spec.name, cwd=tmp_path)
            assert proc.returncode == 3 and words in proc.stderr, (command, proc.stderr)
            assert "Traceback" not in proc.stderr
        assert lock.read_text() == damaged  # never overwritten, never silently re-locked
