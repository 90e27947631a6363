"""The compiler's plug-ins (issue 10): designs, system hooks and audit families.

What must hold: every shipped spec keeps its spec digest, plan digest and counts (pinned); the
families are registered in run order; a family whose needs the design cannot meet is refused with a
located error (golden files); a population design with an LLM screener compiles with its true
estimate (profiles x conditions x replicates model calls) without the model server.
Set UPDATE_GOLDEN=1 to rewrite the golden files after a deliberate change, then review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from compiler import compile_spec
from compiler.designs import DESIGNS, design_of
from compiler.families import FAMILIES, family_ids
from compiler.hashing import digest
from compiler.plan import plan_digest
from compiler.registry import Needs
from compiler.systems import SYSTEMS
from conftest import REPO, run_cli

GOLDEN = Path(__file__).parent / "golden"
#: Counts that depend on litellm's tokenizers and cost map, not on the compiler.
UNPINNED_COUNTS = ("estimated_tokens", "estimated_cost_usd")

POP_SPEC = """\
audit: pop-audit
title: Population audit
seed: 11
jobs:
  - {id: accountant, title: Accountant, description: Prepare and examine financial records.}
candidates:
  generator: population
  profiles_per_job: 120
  roles:
    x: {attribute: gender, x0: female, x1: male}
    z: [age, race]
    b: [education, experience]
    r: [first_name, surname, region]
  estimation: {folds: 5, bootstrap: 200}
systems:
  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100]}
"""

LLM_SYSTEM = """\
  - id: smol
    kind: llm_score
    model: openai/smollm2
    api_base: http://127.0.0.1:8765/v1
    conditions: [baseline, fairness]
    replicates: 3
"""


def _shipped() -> dict[str, dict]:
    out = {}
    for path in sorted((REPO / "specs").glob("*.yaml")):
        c = compile_spec(path)
        out[path.name] = {"spec_digest": digest(c.resolved)["digest"], "plan_digest": plan_digest(c.plan)["digest"],
                          "counts": {k: v for k, v in c.plan["counts"].items() if k not in UNPINNED_COUNTS}}
    return out


def test_shipped_spec_digests_are_pinned(monkeypatch):
    """Pinned: a change here means the locks of the shipped specs stop matching (or their plans change
    task ids). Change only on purpose (UPDATE_GOLDEN=1), with a methods-version note."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    got = _shipped()
    golden = GOLDEN / "spec_digests.json"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    assert got == json.loads(golden.read_text())


def test_registries():
    # every family runs after the families whose results it reads (``after``); no order is pinned, so
    # adding a family touches no file but its own
    ids = family_ids()
    assert {"metric_suite", "llm_validity", "effects", "causal", "descriptives"} <= set(ids)
    for fid, fam in FAMILIES.items():
        assert all(ids.index(other) < ids.index(fid) for other in fam.after), fid
    assert FAMILIES["effects"].after == FAMILIES["llm_validity"].after == ("metric_suite",)
    assert set(DESIGNS) == {"template", "llm", "population", "score_file", "applicants"}
    assert set(SYSTEMS) == {"embedding", "precomputed", "llm_score", "llm_compare", "http", "applicant_file", "command",
                            "python", "lexical"}
    assert FAMILIES["metric_suite"].needs == FAMILIES["effects"].needs == Needs.of("paired")
    assert FAMILIES["causal"].needs == Needs.of("unpaired")
    assert FAMILIES["llm_validity"].needs == Needs.of("answers") | Needs.of("llm_generation")
    assert {d.id: d.provides for d in DESIGNS.values()} == {
        "template": {"paired", "tool_text"}, "llm": {"paired", "tool_text", "llm_generation"},
        "score_file": {"paired"}, "population": {"unpaired"}, "applicants": {"applicants"}}
    assert DESIGNS["applicants"].keeps_rows is False and SYSTEMS["applicant_file"].needs_text is False
    assert SYSTEMS["llm_score"].provides == SYSTEMS["llm_compare"].provides == {"answers"}
    assert SYSTEMS["http"].provides == SYSTEMS["command"].provides == SYSTEMS["python"].provides == {"answers"}
    assert {k for k, d in SYSTEMS.items() if d.runs_code} == {"command", "python"}  # need --allow-exec (issue 36)
    from compiler.spec import LLM_SYSTEM_KINDS, SYSTEM_KINDS, SYSTEM_MODELS
    # one declaration per kind, in the spec's order, each with the spec model compiler.blocks declares
    assert tuple(SYSTEMS) == SYSTEM_KINDS == ("embedding", "precomputed", "llm_score", "llm_compare", "http", "applicant_file",
                                              "command", "python", "lexical")
    assert all(SYSTEMS[k].model is SYSTEM_MODELS[k] for k in SYSTEMS) and LLM_SYSTEM_KINDS == ("llm_score", "llm_compare")


NEEDS_CASES = {
    "family_effects_on_population": POP_SPEC + "analysis:\n  effect_size: {sesoi: 0.3}\n",
    "family_validity_on_population": POP_SPEC + "analysis:\n  validity:\n    positive_control: {contrast: match}\n",
    "family_metric_suite_on_population": POP_SPEC + "thresholds:\n  research: {score_delta: {pass: 0.03, investigate: 0.05}}\n",
}


@pytest.mark.parametrize("case", sorted(NEEDS_CASES))
def test_unmet_needs_are_refused_golden(case, write_spec, tmp_path):
    """Before issue 10 these compiled (thresholds, silently ignored) or crashed with a traceback
    (effect_size: KeyError in resolve; validity: AttributeError in validate)."""
    spec = write_spec(NEEDS_CASES[case], **{"scores.csv": "job_id,cv_id,score\n"})
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    golden = GOLDEN / "errors" / f"{case}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(proc.stderr)
    assert proc.stderr == golden.read_text()


def test_population_llm_score_compiles_with_its_true_estimate(write_spec, monkeypatch):
    """profiles_per_job x jobs x conditions x replicates model calls (no server is contacted)."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    text = POP_SPEC.replace("  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100]}\n",
                            LLM_SYSTEM)
    text = text.replace("jobs:\n", "jobs:\n  - {id: data-analyst, title: Data Analyst, description: SQL.}\n")
    c = compile_spec(write_spec(text))
    assert design_of(c.resolved).id == "population"
    counts = c.plan["counts"]
    assert counts["profiles"] == 120 * 2
    assert counts["model_calls"] == 120 * 2 * 2 * 3 == 1440
    assert counts["estimated_tokens"] > counts["model_calls"]
    assert counts["estimated_cost_usd"] is None  # a local model: unknown to litellm's cost map
    stages = {s["stage"]: s["calls"] for s in c.plan["llm_estimate"]["stages"]}
    assert stages == {"score: smol / baseline": 720, "score: smol / fairness": 720}
    assert [t["kind"] for t in c.plan["tasks"]].count("analyse_causal") == 1
    assert c.resolved["systems"][0]["endpoint"]["api_base"] == "http://127.0.0.1:8765/v1"


def test_population_llm_compare_resolves_a_default_reference(write_spec, monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    text = POP_SPEC.replace("  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100]}\n",
                            LLM_SYSTEM.replace("llm_score", "llm_compare"))
    c = compile_spec(write_spec(text))
    refs = c.resolved["systems"][0]["references"]
    assert refs == {"accountant": {"source": "template generator (identity-neutral, matching)",
                                   "text": None, "sha256": None}}
    assert c.plan["counts"]["model_calls"] == 120 * 2 * 3


def test_checks_moved_into_designs_and_hooks_still_locate_their_errors(write_spec, tmp_path):
    """Messages of checks that moved out of compiler.validate (no golden file of their own)."""
    from compiler.errors import SpecError
    from conftest import TINY_SCORES, TINY_SPEC

    text = (TINY_SPEC.replace("    V01: {sex_gender: F}\n", "    V01: {sex_gender: F}\n    V02: {sex_gender: F}\n")
            .replace("  - {id: vendor, kind: precomputed, path: scores.csv}\n",
                     "  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [1, 0]}\n"
                     "  - {id: cmp, kind: llm_compare, model: openai/smollm2}\n"))
    with pytest.raises(SpecError) as err:
        compile_spec(write_spec(text, **{"scores.csv": TINY_SCORES}))
    shown = str(err.value).replace(str(tmp_path.resolve()) + "/", "").replace(str(tmp_path) + "/", "")
    assert shown == (  # byte-identical to the messages before the checks moved (commit be10cbe)
        "spec.yaml:1:1: candidates: candidates is required when a system is not precomputed (systems: cmp)\n"
        "spec.yaml:14:5: variants.table.V02: variants 'V01' and 'V02' set the same levels\n"
        "spec.yaml:16:5: jobs[0]: job 'j1' needs a description or description_file (a system scores its text)\n"
        "spec.yaml:18:68: systems[0].score_range: score_range must be [low, high] with low < high (got [1.0, 0.0])\n"
        "spec.yaml:19:5: systems[1]: job 'j1' has no template family, so llm_compare cannot draw a default "
        "reference resume; give references.j1: <file> (a fixed reference candidate, seed 003 §3.4)")


def test_causal_margin_is_resolved_only_when_written(write_spec, monkeypatch):
    """Issue 39 §7: ``candidates.estimation.margin`` stays out of the resolved spec (and the analyse_causal
    task) unless written, so the digests of earlier population specs do not move; written, it is locked."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    text = POP_SPEC.replace("  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100]}\n",
                            LLM_SYSTEM)
    bare = compile_spec(write_spec(text))
    assert "margin" not in bare.resolved["candidates"]["estimation"]
    written = compile_spec(write_spec(text.replace("{folds: 5, bootstrap: 200}",
                                                   "{folds: 5, bootstrap: 200, margin: 0.01}")))
    assert written.resolved["candidates"]["estimation"]["margin"] == 0.01
    task = next(t for t in written.plan["tasks"] if t["kind"] == "analyse_causal")
    assert task != next(t for t in bare.plan["tasks"] if t["kind"] == "analyse_causal")
    assert digest(written.resolved) != digest(bare.resolved)
