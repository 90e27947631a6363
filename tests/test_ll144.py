"""The ``ll144`` audit family (NYC Local Law 144 selection or scoring rates and impact ratios from the
audit's own test data; issue 33): its block and checks (located, golden, all at once), the any-of need,
``ll144.csv`` through the real CLI against an independent pandas computation (1e-12), the pure
computation's cases and invariants (hypothesis), and what the block leaves unchanged (shipped spec
digests, ``metrics.csv`` bytes, the words "four-fifths" and "statutory" outside ``#ll144``)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli

GOLDEN = Path(__file__).parent / "golden" / "errors"
REPO = Path(__file__).resolve().parents[1]

SPEC = """\
audit: ll144-check
title: LL144 rates of a vendor's scores
seed: 5
axes:
  sex_gender:
    slot: name
    levels: [Male-FR, Female-FR]
    cues: {Male-FR: [Paul Martin], Female-FR: [Anne Martin]}
  persona:
    slot: name
    levels: [p1, p2, p3]
    cues: {p1: [A], p2: [B], p3: [C]}
variants:
  reference: BASE
  table:
    BASE: {sex_gender: Male-FR, persona: p1}
    V01: {sex_gender: Female-FR, persona: p1}
    V02: {sex_gender: Male-FR, persona: p2}
    V03: {sex_gender: Female-FR, persona: p3}
jobs:
  - {id: j1, title: Analyst}
systems:
  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100]}
disclosure:
  employer: Acme Corp
  aedt: {name: Acme Match, version: "4.2", distributed: "2024-03-01"}
  auditor: {name: Example Audits LLC, independence: No interest in Acme or its vendor.}
  data: {source: Test résumés scored by the vendor}
analysis:
  k: {counterfactual: 2, group: 2, merit: 2}
  bootstrap: 100
"""
DISCLOSURE = SPEC[SPEC.index("disclosure:"):SPEC.index("analysis:")]
SEX = "    sex: {axis: sex_gender, levels: {Male-FR: male, Female-FR: female}}\n"
RACE = "    race_ethnicity: {axis: persona, levels: {p1: white, p2: black_or_african_american, p3: unknown}}\n"
WHY = "    why_test_data: The tool has not screened any applicant yet.\n"
SCORES = "job_id,cv_id,variant,score,is_true_match\n" + "".join(
    f"j1,c{i},{v},{50 + i + d},{i % 2}\n" for i in range(6) for v, d in (("BASE", 0), ("V01", -2), ("V02", 1), ("V03", 0)))

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
systems:
  - {id: minilm, kind: embedding}
""" + DISCLOSURE + """analysis:
  ll144:
    why_test_data: Not yet deployed.
"""

ERROR_CASES = {
    "ll144_unknown_key": SPEC + "  ll144:\n" + WHY + SEX + "    rates: scoring\n",
    "ll144_unmapped_level": SPEC + "  ll144:\n" + WHY + "    sex: {axis: sex_gender, levels: {Male-FR: male}}\n",
    "ll144_not_a_level": SPEC + "  ll144:\n" + WHY + "    sex: {axis: sex_gender, levels: {Male-FR: male, Female-FR: "
                         "female, Femme: female}}\n",
    "ll144_unknown_axis": SPEC + "  ll144:\n" + WHY + "    sex: {axis: gender, levels: {Male-FR: male, Female-FR: female}}\n",
    "ll144_bad_category": SPEC + "  ll144:\n" + WHY + "    race_ethnicity: {axis: persona, levels: {p1: white, p2: "
                          "black, p3: unknown}}\n",
    "ll144_no_key": SPEC + "  ll144:\n" + WHY,
    "ll144_no_disclosure": SPEC.replace(DISCLOSURE, "") + "  ll144:\n" + WHY + SEX,
    "ll144_disclosure_fields": SPEC.replace(DISCLOSURE, "disclosure: {data: {source: Test résumés}}\n")
    + "  ll144:\n" + WHY + SEX,
    "ll144_why_missing": SPEC + "  ll144:\n" + SEX,
    "ll144_why_blank": SPEC + "  ll144:\n    why_test_data: '  '\n" + SEX,
    "ll144_population_keys": POP_SPEC + SEX.replace("sex_gender", "gender"),
    "ll144_selection_without_rule": SPEC + "  ll144:\n" + WHY + SEX + "    rate: selection\n",
    "ll144_selection_per_variant": SPEC.replace("  k: {counterfactual: 2, group: 2, merit: 2}\n", "  decision: {top_k: 2}\n"
                                                "  ranking: per_variant\n") + "  ll144:\n" + WHY + SEX
                                   + "    rate: selection\n",
    "ll144_investigate_above_pass": SPEC + "  ll144:\n" + WHY + SEX
                                    + "    thresholds: {research: {pass: 0.7, investigate: 0.8}}\n",
    "ll144_all_at_once": SPEC + "  ll144:\n    why_test_data: ''\n    rate: selection\n"
                         "    sex: {axis: sex_gender, levels: {Male-FR: male, Woman: female}}\n"
                         "    race_ethnicity: {axis: origin, levels: {p1: white}}\n"
                         "    thresholds: {research: {pass: 0.8, investigate: 0.9}, operational: {pass: 0.8, "
                         "investigate: 0.7}}\n",
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_spec_errors_golden(case, write_spec, tmp_path):
    """Exit 2, every problem at once, each at file:line:col with its key path and what is allowed; no
    traceback and nothing locked."""
    spec = write_spec(ERROR_CASES[case], **{"scores.csv": SCORES})
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    golden = GOLDEN / f"{case}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(proc.stderr)
    assert proc.stderr == golden.read_text()
    if case == "ll144_all_at_once":
        assert run_cli("compile", spec.name, cwd=tmp_path).returncode == 2
        assert not list(tmp_path.glob("*.lock.json"))


def test_needs_are_any_of_paired_or_unpaired(write_spec, tmp_path):
    """The any-of need (issue 33 §2): met by paired candidates or by unpaired profiles; a design giving
    neither is refused at the block, naming both alternatives (no built-in design gives neither, so the
    design's provides are emptied here)."""
    from compiler.designs import PROVIDES_WORDS, Parts, parts_of
    from compiler.families import FAMILIES
    from compiler.load import load_spec
    from compiler.registry import Needs
    from compiler.validate import _family_issues

    # issue 34 adds historical applicants as the third alternative
    assert FAMILIES["ll144"].needs == Needs.of("paired") | Needs.of("unpaired") | Needs.of("applicants")
    assert FAMILIES["ll144"].needs.met({"paired"}) and FAMILIES["ll144"].needs.met({"unpaired", "tool_text"})
    assert not FAMILIES["ll144"].needs.met({"answers"})
    ls = load_spec(write_spec(SPEC + "  ll144:\n" + WHY + SEX, **{"scores.csv": SCORES}))
    parts = parts_of(ls)
    bare = type("Bare", (type(parts.design),), {"provides": frozenset()})()
    found = _family_issues(ls, Parts(bare, ()))
    msgs = [f.message for f in found if "ll144" in f.message]
    words = f"{PROVIDES_WORDS['paired']} or {PROVIDES_WORDS['unpaired']} or {PROVIDES_WORDS['applicants']}"
    assert msgs == [f"family 'll144' needs {words}; design 'score_file' provides "], msgs
    assert [f.loc for f in found if "ll144" in f.message] == [("analysis", "ll144")]


# ----------------------------------------------------------------------------------------------------------
# An independent computation (pandas), from the individuals' categories and scores

SEX_IDS = ["male", "female"]
RACE_IDS = ["hispanic_or_latino", "white", "black_or_african_american", "native_hawaiian_or_pacific_islander",
            "asian", "american_indian_or_alaska_native", "two_or_more_races"]
#: The categories of each variant of SPEC (p3 is mapped to unknown).
VARIANT_CATS = {"BASE": ("male", "white"), "V01": ("female", "white"), "V02": ("male", "black_or_african_american"),
                "V03": ("female", "unknown")}


def expected(ind: pd.DataFrame, *, basis: str, rule: bool, tables=("sex", "race_ethnicity", "intersectional")):
    """Rates and impact ratios by the definitions of 6 RCNY §5-300, written again with pandas; the
    small-category rule (§5-301(d)) on the share of the system x condition's individuals, every group together."""
    out = []
    for (system, condition, group), g in ind.groupby(["system", "condition", "group"]):
        audit = ind[(ind["system"] == system) & (ind["condition"] == condition)]
        if basis == "scoring":
            med = g["score"].median()
            g = g.assign(pos=(g["score"] > med).astype(float), at=(g["score"] == med).astype(int))
        else:
            g = g.assign(pos=g["selected"].astype(float), at=0)
        for table in tables:
            def cats(f):
                if table == "intersectional":
                    return np.where((f["sex"] == "unknown") | (f["race_ethnicity"] == "unknown"), "unknown",
                                    f["sex"] + "/" + f["race_ethnicity"])
                return f[table].to_numpy()
            cat = cats(g)
            ids = [f"{s}/{r}" for s in SEX_IDS for r in RACE_IDS] if table == "intersectional" else \
                (SEX_IDS if table == "sex" else RACE_IDS)
            share = pd.Series(cats(audit)).value_counts().reindex(ids + ["unknown"], fill_value=0) / len(audit)
            agg = (g.assign(cat=cat).groupby("cat").agg(n=("pos", "size"), n_positive=("pos", "sum"),
                                                         n_at_median=("at", "sum"))
                   .reindex(ids + ["unknown"], fill_value=0))
            agg["rate"] = (agg["n_positive"] / agg["n"]).where(agg["n"] > 0)
            agg.loc["unknown", "rate"] = np.nan
            agg["excluded"] = (agg["n"] == 0) | (agg.index == "unknown") | (rule & (share < 0.02))
            top = agg.loc[~agg["excluded"], "rate"].max()
            agg["impact_ratio"] = (agg["rate"] / top).where(~agg["excluded"] & (top > 0))
            agg = agg.reset_index(names="category").assign(system=system, condition=condition, group=group,
                                                            table=table, basis=basis)
            out.append(agg)
    return pd.concat(out, ignore_index=True)


def individuals_of(scores_csv: str, *, system: str = "vendor", threshold=None, top_k=None) -> pd.DataFrame:
    s = pd.read_csv(__import__("io").StringIO(scores_csv))
    s["sex"] = s["variant"].map(lambda v: VARIANT_CATS[v][0])
    s["race_ethnicity"] = s["variant"].map(lambda v: VARIANT_CATS[v][1])
    s = s.assign(system=system, condition="default", group=s["job_id"], unit=s["cv_id"], selected=np.nan)
    if threshold is not None:
        s["selected"] = (s["score"] >= threshold).astype(float)
    if top_k is not None:  # swap-in: each résumé against the reference résumés of the other candidates
        for i, r in s.iterrows():
            refs = s[(s["job_id"] == r["job_id"]) & (s["variant"] == "BASE") & (s["cv_id"] != r["cv_id"])]["score"]
            above, same = int((refs > r["score"]).sum()), int((refs == r["score"]).sum())
            s.loc[i, "selected"] = min(max((top_k - above) / (same + 1), 0.0), 1.0)
    return s


COMPARED = ["n", "n_positive", "rate", "impact_ratio", "n_at_median"]


def assert_tables_equal(got: pd.DataFrame, want: pd.DataFrame, *, scoring: bool) -> None:
    key = ["system", "condition", "group", "table", "category"]
    m = got.merge(want, on=key, suffixes=("", "_want"), how="outer", indicator=True)
    assert (m["_merge"] == "both").all(), m[m["_merge"] != "both"][key]
    assert len(m) == len(got) == len(want)
    for col in COMPARED if scoring else COMPARED[:-1]:
        a, b = m[col].to_numpy(float), m[f"{col}_want"].to_numpy(float)
        assert np.array_equal(np.isnan(a), np.isnan(b)), (col, m[key][np.isnan(a) != np.isnan(b)])
        assert np.allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=0, atol=1e-12), col
    assert (m["excluded"].astype(bool) == m["excluded_want"].astype(bool)).all()
    # every empty ratio says why; every defined one is in [0, 1]
    assert (m["reason"].fillna("").ne("") | m["impact_ratio"].notna()).all()
    r = m["impact_ratio"].dropna()
    assert ((r >= 0) & (r <= 1)).all()


def _rows(jobs: dict[str, dict[str, list[float]]]) -> str:
    out = "job_id,cv_id,variant,score,is_true_match\n"
    for job, by_variant in jobs.items():
        for v, scores in by_variant.items():
            out += "".join(f"{job},c{i:02d},{v},{x:g},{i % 2}\n" for i, x in enumerate(scores))
    return out


# scoring run: ties at the median with unknowns in it; a ratio of 0 beside undefined ones; all scores equal
SCORING_JOBS = {
    "ties": {"BASE": [50, 50, 60, 70, 40, 50], "V01": [50, 45, 50, 55, 40, 50], "V02": [50, 65, 50, 40, 50, 80],
             "V03": [50, 50, 55, 30, 50, 50]},
    "zero": {"BASE": [70, 80, 90, 60, 75, 85], "V01": [10, 20, 30, 5, 15, 25], "V02": [65, 85, 95, 55, 70, 90],
             "V03": [40, 40, 40, 40, 40, 40]},
    "flat": {v: [33] * 6 for v in ("BASE", "V01", "V02", "V03")},
}
# threshold run (t = 60): impact ratios of exactly 0.8 and 0.7; nobody at or above t
SELECT_JOBS = {
    "status": {"BASE": [61] * 10, "V01": [61] * 8 + [59] * 2, "V02": [60] * 7 + [10] * 3, "V03": [70] * 5 + [0] * 5},
    "none": {v: [59, 10, 20, 30, 0, 5, 1, 2, 3, 4] for v in ("BASE", "V01", "V02", "V03")},
}
# top-K run (K = 2, swap-in): variant résumés tied with a reference résumé at the cutoff
TOPK_JOBS = {
    "tied": {"BASE": [90, 80, 70, 70, 10, 20], "V01": [80, 70, 60, 70, 10, 15], "V02": [85, 80, 75, 70, 5, 20],
             "V03": [70, 70, 70, 70, 70, 70]},
}

BLOCK = ("  ll144:\n" + WHY + SEX + RACE + "    bootstrap: 200\n"
         "    thresholds: {research: {pass: 0.8, investigate: 0.7}}\n")


def _spec(jobs: dict, extra: str = "", block: str = BLOCK) -> str:
    text = SPEC.replace("jobs:\n  - {id: j1, title: Analyst}\n", "jobs:\n" + "".join(
        f"  - {{id: {j}, title: Analyst}}\n" for j in jobs))
    return text.replace("  bootstrap: 100\n", "  bootstrap: 100\n" + extra) + block


def _run(tmp_path: Path, name: str, spec: str, scores: str, *, to_report: bool = True, args: tuple = ()) -> Path:
    """compile + execute through the real CLI; ``to_report`` False stops the run at its report stage (the
    test hook of runtime.testhooks: every table is written by then, the PDF is not rendered)."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "spec.yaml").write_text(spec)
    (folder / "scores.csv").write_text(scores)
    assert run_cli("compile", "spec.yaml", cwd=folder).returncode == 0
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200")
    if not to_report:
        env["AUDIT_TEST_KILL_AT"] = "report"
    proc = subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", "execute", "--unsigned", "spec.yaml",
                           "--quiet", "--out", "out", *args], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode in ((0, 4) if to_report else (-9,)), proc.stderr
    return next((folder / "out" / "ll144-check").iterdir())


def _read(run: Path) -> pd.DataFrame:
    """ll144.csv with only empty cells missing (a status "N/A" stays a string)."""
    return pd.read_csv(run / "ll144.csv", keep_default_na=False, na_values=[""])


@pytest.fixture(scope="module")
def scoring_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ll144")
    return _run(tmp, "scoring", _spec(SCORING_JOBS), _rows(SCORING_JOBS), args=("--fail-on", "FAIL"))


def test_scoring_run_matches_pandas(scoring_run):
    """Scoring rates (no decision rule): share strictly above the job's median (unknowns in it), ties at the
    median counted for no category; a ratio of 0 beside undefined ones; all scores equal (median = maximum):
    every rate 0, every ratio empty with its reason and N/A."""
    got = _read(scoring_run)
    import compiler.blocks.ll144  # noqa: F401 - the columns, exactly as issue 33 §4 lists them
    assert list(got.columns) == ["system", "condition", "group", "table", "category", "basis", "n", "n_positive",
                                 "rate", "impact_ratio", "excluded", "reason", "median", "n_at_median", "status",
                                 "status_operational", "extra_ci_low", "extra_ci_high", "extra_p_value"]
    want = expected(individuals_of(_rows(SCORING_JOBS)), basis="scoring", rule=False)
    assert_tables_equal(got, want, scoring=True)
    assert set(got["basis"]) == {"scoring"}
    ties = got[(got["group"] == "ties") & (got["table"] == "sex")].set_index("category")
    assert ties["median"].tolist() == [50.0] * 3
    assert ties["n_at_median"].tolist() == [6, 7, 0]  # male (BASE 3, V02 3), female (V01 3, V03 4), no unknown sex
    race_unknown = got[(got["group"] == "ties") & (got["table"] == "race_ethnicity") & (got["category"] == "unknown")]
    assert race_unknown[["n", "n_at_median"]].values.tolist() == [[6, 4]]  # V03 (p3): counted, in the median
    # 6 RCNY: every category a row (n = 0 too), plus one unknown row; 2 + 7 + 14 categories + 3 unknown rows per job
    assert (got.groupby("group").size() == 2 + 7 + 14 + 3).all()
    zero = got[(got["group"] == "zero") & (got["table"] == "intersectional")].set_index("category")
    assert zero.loc["female/white", "impact_ratio"] == 0.0 and zero.loc["female/white", "status"] == "FAIL"
    assert zero.loc["male/white", "impact_ratio"] == 1.0
    assert math.isnan(zero.loc["female/asian", "impact_ratio"]) and zero.loc["female/asian", "reason"] == \
        "no individual in this category"
    flat = got[got["group"] == "flat"]
    known = flat[(flat["category"] != "unknown") & (flat["n"] > 0)]
    assert (known["rate"] == 0).all() and known["impact_ratio"].isna().all() and (known["status"] == "N/A").all()
    assert set(known["reason"]) == {"no eligible category has a scoring rate above 0: every impact ratio is undefined"}
    unknown = got[got["category"] == "unknown"]
    assert unknown["rate"].isna().all() and unknown["excluded"].all() and unknown["impact_ratio"].isna().all()
    assert got.loc[got["table"] == "race_ethnicity"].query("category == 'unknown'")["n"].tolist() == [6, 6, 6]


def test_scoring_run_report_and_seal(scoring_run):
    """The section is in the report (its anchor, the EEO-1 labels, why test data, beyond the law); the
    table is sealed with the run's reproducible results; the statuses reach the --fail-on gate's rows;
    outside #ll144 the report never says "four-fifths" or "statutory"."""
    import json
    import re

    html = (scoring_run / "report.html").read_text()
    assert html.count('<section id="ll144"') == 1
    section = re.search(r'<section id="ll144".*?</section>', html, re.S).group(0)
    for words in ("Black or African American", "Native Hawaiian or Pacific Islander", "a designed sample, not applicants",
                  "The tool has not screened any applicant yet.", "Beyond the law", "29 CFR 1607.4(D)",
                  "four-fifths", "statutory"):
        assert words in section, words
    rest = html.replace(section, "").lower()
    assert "four-fifths" not in rest and "statutory" not in rest
    manifest = json.loads((scoring_run / "manifest.json").read_text())
    assert "ll144.csv" in json.dumps(manifest)
    summary = json.loads((scoring_run / "summary.json").read_text())
    got = _read(scoring_run)
    rated = got[got["status"].notna()]
    assert set(rated["status"]) <= {"PASS", "INVESTIGATE", "FAIL", "N/A"}
    assert summary["status_counts"]["research"]["FAIL"] >= int((rated["status"] == "FAIL").sum()) > 0
    gate = [r for r in summary["gate"]["rows"] if r["family"] == "ll144"]
    assert summary["exit_code"] == 4 and gate == [
        {"family": "ll144", "system": "vendor", "condition": "default", "item": f"{r.group} {r.table} {r.category} impact ratio",
         "status": "FAIL"} for r in rated[rated["status"] == "FAIL"].itertuples()]


def test_without_the_block_metrics_are_byte_identical(scoring_run, tmp_path):
    plain = _run(tmp_path, "plain", _spec(SCORING_JOBS, block=""), _rows(SCORING_JOBS), to_report=False)
    assert not (plain / "ll144.csv").exists()
    assert (plain / "metrics.csv").read_bytes() == (scoring_run / "metrics.csv").read_bytes()


def test_threshold_run_statuses_on_the_bounds(tmp_path):
    """Selection rates under analysis.decision.threshold (score >= t): ratios of exactly 0.8 (PASS) and 0.7
    (INVESTIGATE) at pass 0.8 / investigate 0.7; nobody at or above t: every ratio undefined, N/A."""
    run = _run(tmp_path, "select", _spec(SELECT_JOBS, "  decision: {threshold: 60}\n")
               .replace("  k: {counterfactual: 2, group: 2, merit: 2}\n", ""), _rows(SELECT_JOBS), to_report=False)
    got = _read(run)
    assert set(got["basis"]) == {"selection"} and got["median"].isna().all()
    assert_tables_equal(got, expected(individuals_of(_rows(SELECT_JOBS), threshold=60), basis="selection", rule=False),
                        scoring=False)
    inter = got[(got["group"] == "status") & (got["table"] == "intersectional")].set_index("category")
    assert inter.loc["female/white", "impact_ratio"] == 0.8 and inter.loc["female/white", "status"] == "PASS"
    assert inter.loc["male/black_or_african_american", "impact_ratio"] == pytest.approx(0.7, abs=1e-15)
    assert inter.loc["male/black_or_african_american", "status"] == "INVESTIGATE"
    race = got[(got["group"] == "status") & (got["table"] == "race_ethnicity")].set_index("category")
    assert race.loc["black_or_african_american", "status"] == "INVESTIGATE"  # 0.7 / 0.9 = 0.778
    assert (race["status_operational"].fillna("") == race["status"].fillna("")).all()  # operational = research
    none = got[(got["group"] == "none") & (got["n"] > 0) & (got["category"] != "unknown")]
    assert (none["rate"] == 0).all() and none["impact_ratio"].isna().all() and (none["status"] == "N/A").all()


def test_top_k_run_ties_at_the_cutoff(tmp_path):
    """Selection rates under a written top_k with swap-in ranking: fractional membership at a tie across the
    cutoff, against the same rule written again in the test."""
    run = _run(tmp_path, "topk", _spec(TOPK_JOBS, "  decision: {top_k: 2}\n")
               .replace("  k: {counterfactual: 2, group: 2, merit: 2}\n", ""), _rows(TOPK_JOBS), to_report=False)
    got = _read(run)
    ind = individuals_of(_rows(TOPK_JOBS), top_k=2)
    assert set(ind["selected"]) - {0.0, 1.0}  # the case has ties across the cutoff
    assert_tables_equal(got, expected(ind, basis="selection", rule=False), scoring=False)
    assert (got["n_positive"] % 1 != 0).any()


# ----------------------------------------------------------------------------------------------------------
# The pure computation: the small-category rule, and invariants (hypothesis)

def _small_frame() -> pd.DataFrame:
    """100 profiles of one job: asian 1 (1%, selected), hispanic_or_latino 2 (exactly 2%, one selected),
    white 60 (30 selected), black 37 (10 selected)."""
    race = ["asian"] + ["hispanic_or_latino"] * 2 + ["white"] * 60 + ["black_or_african_american"] * 37
    sel = [1.0] + [1.0, 0.0] + [1.0] * 30 + [0.0] * 30 + [1.0] * 10 + [0.0] * 27
    return pd.DataFrame({"system": "s", "condition": "default", "group": "j", "unit": [f"u{i}" for i in range(100)],
                         "sex": ["male", "female"] * 50, "race_ethnicity": race, "score": np.arange(100.0),
                         "selected": sel})


@pytest.mark.parametrize("rule", [False, True])
def test_small_category_rule_moves_the_reference(rule):
    """Under 2% is excluded with the rule (never the reference; n and rate kept, with the justification);
    exactly 2% stays; without the rule the 1% category is the reference."""
    from runtime.analysis.ll144 import ll144_rows

    frame = _small_frame()
    got = ll144_rows(frame, basis="selection", sex=SEX_IDS, race=RACE_IDS, small_rule="too few to rate" if rule else None,
                     n_bootstrap=0, seed=1)
    assert_tables_equal(got, expected(frame, basis="selection", rule=rule), scoring=False)
    race = got[got["table"] == "race_ethnicity"].set_index("category")
    assert race.loc["asian", "rate"] == 1.0 and race.loc["asian", "n"] == 1
    assert race.loc["hispanic_or_latino", "impact_ratio"] == (1.0 if rule else 0.5)  # exactly 2%: eligible either way
    if rule:
        assert math.isnan(race.loc["asian", "impact_ratio"]) and race.loc["asian", "excluded"]
        assert "excluded by the small-category rule (too few to rate)" in race.loc["asian", "reason"]
        assert race.loc["white", "impact_ratio"] == 1.0  # the reference moved to the next highest rate
        assert race.loc["hispanic_or_latino", "rate"] == 0.5 and race.loc["white", "rate"] == 0.5
    else:
        assert race.loc["asian", "impact_ratio"] == 1.0 and race.loc["white", "impact_ratio"] == 0.5
    assert race.loc["black_or_african_american", "impact_ratio"] == pytest.approx((10 / 37) / (0.5 if rule else 1.0),
                                                                                   abs=1e-12)


def test_small_category_rule_reads_the_audit_not_the_requisition():
    """6 RCNY §5-301(d): "less than 2% of the data being used for the bias audit". Two requisitions of 100 and
    400 profiles: asian is 3 of 100 in the first (3%) but 3 of 500 in the audit (0.6%): excluded from both
    tables; hispanic is 1 of 100 in the first (1%) but 12 of 500 (2.4%): eligible in both."""
    from runtime.analysis.ll144 import ll144_rows

    def req(group, counts, start):
        race = [r for r, k in counts.items() for _ in range(k)]
        sel = [float(i % 2 == 0) for i in range(len(race))]
        return pd.DataFrame({"system": "s", "condition": "default", "group": group,
                             "unit": [f"{group}{i}" for i in range(len(race))], "sex": ["male", "female"] * (len(race) // 2),
                             "race_ethnicity": race, "score": np.arange(start, start + len(race), dtype=float),
                             "selected": sel})

    frame = pd.concat([req("j1", {"asian": 3, "hispanic_or_latino": 1, "white": 96}, 0),
                       req("j2", {"hispanic_or_latino": 11, "white": 389}, 100)], ignore_index=True)
    got = ll144_rows(frame, basis="selection", sex=SEX_IDS, race=RACE_IDS, small_rule="too few", n_bootstrap=0, seed=1)
    assert_tables_equal(got, expected(frame, basis="selection", rule=True), scoring=False)
    race = got[got["table"] == "race_ethnicity"].set_index(["group", "category"])
    assert race.loc[("j1", "asian"), "excluded"] and math.isnan(race.loc[("j1", "asian"), "impact_ratio"])
    assert "0.6% of the audit's individuals" in race.loc[("j1", "asian"), "reason"]
    assert not race.loc[("j1", "hispanic_or_latino"), "excluded"]
    # asian (rate 2/3) would be j1's reference under a per-requisition rule (white 0.75); excluded, white is it
    assert race.loc[("j1", "white"), "impact_ratio"] == 1.0 and race.loc[("j1", "hispanic_or_latino"), "impact_ratio"] == 0.0
    assert not race.loc[("j2", "hispanic_or_latino"), "excluded"]


def test_independent_individuals_get_a_test_and_intervals_hold_the_ratio():
    """Profiles are independent: Fisher's exact test against the reference (beyond the law); a counterfactual
    pool's rows are not, so no p-value; every interval holds its point estimate's neighbourhood in [0, 1]."""
    from scipy.stats import fisher_exact

    from runtime.analysis.ll144 import ll144_rows

    frame = _small_frame()
    got = ll144_rows(frame, basis="selection", sex=SEX_IDS, race=RACE_IDS, n_bootstrap=200, seed=3, independent=True)
    race = got[got["table"] == "race_ethnicity"].set_index("category")
    assert race.loc["black_or_african_american", "extra_p_value"] == pytest.approx(
        fisher_exact([[10, 27], [1, 0]]).pvalue, abs=1e-12)
    assert math.isnan(race.loc["asian", "extra_p_value"])  # the reference itself
    paired = ll144_rows(frame, basis="selection", sex=SEX_IDS, race=RACE_IDS, n_bootstrap=0, seed=3)
    assert paired["extra_p_value"].isna().all() and paired["extra_ci_low"].isna().all()
    ci = got.dropna(subset=["extra_ci_low"])
    assert len(ci) and ((ci["extra_ci_low"] >= 0) & (ci["extra_ci_low"] <= ci["extra_ci_high"])
                        & (ci["extra_ci_high"] <= 1)).all()
    again = ll144_rows(frame.sample(frac=1, random_state=4), basis="selection", sex=SEX_IDS, race=RACE_IDS,
                       n_bootstrap=200, seed=3, independent=True)
    pd.testing.assert_frame_equal(got, again)  # same seed, any row order: the same draws


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def _frames(draw):
    n_units = draw(st.integers(3, 12))
    rows = []
    for u in range(n_units):
        for _ in range(draw(st.integers(1, 3))):
            rows.append({"unit": f"u{u}", "sex": draw(st.sampled_from(["male", "female", "unknown"])),
                         "race_ethnicity": draw(st.sampled_from(["white", "asian", "unknown"])),
                         "score": float(draw(st.integers(0, 20)))})
    frame = pd.DataFrame(rows).assign(system="s", condition="default", group=draw(st.sampled_from(["j1", "j2"])))
    return frame.assign(selected=(frame["score"] >= 10).astype(float))


@settings(max_examples=25, deadline=None)
@given(frame=_frames(), basis=st.sampled_from(["scoring", "selection"]), c=st.sampled_from([0.5, 2.0, 4.0, 10.0]),
       perm=st.randoms(use_true_random=False), rule=st.booleans())
def test_invariants(frame, basis, c, perm, rule):
    """Row order, relabelled unit ids, and scores (with their score_range) times c change nothing, intervals
    included; ratios and rates lie in [0, 1]; the table equals the pandas computation."""
    from runtime.analysis.ll144 import ll144_rows

    kw = dict(basis=basis, sex=SEX_IDS, race=RACE_IDS, small_rule="r" if rule else None, n_bootstrap=50, seed=7,
              thresholds={"research": {"pass": 0.8, "investigate": 0.7}, "operational": {"pass": 0.8, "investigate": 0.7}})
    base = ll144_rows(frame, **kw)
    idx = list(frame.index)
    perm.shuffle(idx)
    shuffled = frame.loc[idx]
    names = {u: f"x{perm.randrange(10**9)}-{i}" for i, u in enumerate(sorted(set(frame["unit"])))}
    relabelled = shuffled.assign(unit=shuffled["unit"].map(names))
    scaled = relabelled.assign(score=relabelled["score"] * c)
    pd.testing.assert_frame_equal(base, ll144_rows(shuffled, **kw))
    pd.testing.assert_frame_equal(base, ll144_rows(relabelled, **kw))
    out = ll144_rows(scaled, **kw)
    pd.testing.assert_frame_equal(base.drop(columns="median"), out.drop(columns="median"))
    assert np.allclose(base["median"] * c, out["median"], equal_nan=True)
    for col in ("rate", "impact_ratio", "extra_ci_low", "extra_ci_high"):
        v = base[col].dropna()
        assert ((v >= 0) & (v <= 1)).all(), col
    assert_tables_equal(base, expected(frame, basis=basis, rule=rule), scoring=basis == "scoring")


# ----------------------------------------------------------------------------------------------------------
# A population design: profiles, their gender and race mapped by the fixed mapping

POP_RUN_SPEC = POP_SPEC.replace("  profiles_per_job: 120\n", "  profiles_per_job: 200\n").replace(
    "    r: [first_name, surname, region]\n", "    r: [first_name, surname, region]\n  estimation: {folds: 2, bootstrap: 100}\n"
).replace("  - {id: minilm, kind: embedding}\n", "  - {id: vendor, kind: precomputed, path: scores.csv, score_range: [0, 100]}\n"
          ).replace("    why_test_data: Not yet deployed.\n", "    why_test_data: Not yet deployed.\n    bootstrap: 200\n"
                    "    small_category_rule: {justification: Categories under 2% are too small to rate.}\n")


def test_population_profiles_match_pandas(tmp_path):
    """Scores for 200 profiles from a file: scoring rates (a population design states no decision rule) by the
    fixed mapping written into the lock, equal to pandas on the run's profiles.csv; Mood's median test on
    profiles (independent); the section says the four races are exclusive by approximation."""
    import json

    from scipy.stats import median_test

    from runtime.generate.population import sample_profiles

    p = sample_profiles(job_id="accountant", family="accountant", n=200, seed=11)
    g = np.random.default_rng(1)
    scores = pd.DataFrame({"job_id": p.job_id, "cv_id": p.cv_id,
                           "score": np.round(50 + 3 * (p.gender == "male") + g.normal(0, 5, len(p)), 1)})
    folder = tmp_path / "pop"
    folder.mkdir()
    (folder / "spec.yaml").write_text(POP_RUN_SPEC)
    scores.to_csv(folder / "scores.csv", index=False)
    assert run_cli("compile", "spec.yaml", cwd=folder).returncode == 0
    lock = json.loads((folder / "spec.lock.json").read_text())
    resolved = json.dumps(lock)
    assert '"black": "black_or_african_american"' in resolved and '"hispanic": "hispanic_or_latino"' in resolved
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200", AUDIT_TEST_KILL_AT="report")
    proc = subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", "execute", "--unsigned", "spec.yaml",
                           "--quiet", "--out", "out"], cwd=folder, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == -9, proc.stderr
    run = next((folder / "out" / "pop-audit").iterdir())
    prof = pd.read_csv(run / "profiles.csv")
    ind = prof.merge(scores, on=["job_id", "cv_id"]).assign(
        system="vendor", condition="default", group=lambda d: d["job_id"], unit=lambda d: d["cv_id"], selected=np.nan,
        sex=lambda d: d["gender"].map({"male": "male", "female": "female"}).fillna("unknown"),
        race_ethnicity=lambda d: d["race"].map({"white": "white", "black": "black_or_african_american", "asian": "asian",
                                                 "hispanic": "hispanic_or_latino"}).fillna("unknown"))
    assert len(ind) == 200
    got = _read(run)
    assert set(got["basis"]) == {"scoring"}
    assert_tables_equal(got, expected(ind, basis="scoring", rule=True), scoring=True)
    inter = got[got["table"] == "intersectional"].set_index("category")
    # 3 Asian men of 200 (1.5%): the highest rate (3 of 3 above the median), excluded by the rule, so the
    # reference moves to the highest eligible rate; its n and rate stay, with the justification
    assert inter.loc["male/asian", ["n", "rate"]].tolist() == [3, 1.0] and inter.loc["male/asian", "excluded"]
    assert math.isnan(inter.loc["male/asian", "impact_ratio"]) and "too small to rate" in inter.loc["male/asian", "reason"]
    eligible = inter[~inter["excluded"].astype(bool)]
    assert eligible["impact_ratio"].max() == 1.0 and eligible["rate"].max() < 1.0
    sex = got[got["table"] == "sex"].set_index("category")
    ref = "male" if sex.loc["male", "impact_ratio"] == 1.0 else "female"
    other = "female" if ref == "male" else "male"
    want_p = median_test(ind.loc[ind["sex"] == other, "score"], ind.loc[ind["sex"] == ref, "score"], ties="ignore")[1]
    assert sex.loc[other, "extra_p_value"] == pytest.approx(want_p, abs=1e-12)
    html = (run / "report.html").read_text()
    assert 'id="ll144"' in html and "exclusive" in html and "profile attribute race" in html


def test_resolution_is_explicit_and_one_axis_may_serve_both_keys(write_spec):
    """The resolved block (what the lock hashes) has every default explicit: auto resolved to the basis,
    operational thresholds = research; one axis may give both sex and race/ethnicity; without the block the
    resolved analysis has no ll144 key (so no other spec's digest moves)."""
    from compiler import compile_spec

    both = ("  ll144:\n" + WHY + "    sex: {axis: persona, levels: {p1: male, p2: female, p3: unknown}}\n"
            "    race_ethnicity: {axis: persona, levels: {p1: white, p2: asian, p3: two_or_more_races}}\n"
            "    thresholds: {research: {pass: 0.8, investigate: 0.7}}\n")
    c = compile_spec(write_spec(SPEC + both, **{"scores.csv": SCORES}))
    block = c.resolved["analysis"]["ll144"]
    assert block["rate"] == "scoring" and block["bootstrap"] == 1000 and block["small_category_rule"] is None
    assert block["thresholds"] == {"research": {"pass": 0.8, "investigate": 0.7},
                                   "operational": {"pass": 0.8, "investigate": 0.7}}
    assert block["sex"]["axis"] == block["race_ethnicity"]["axis"] == "persona"
    threshold = SPEC.replace("  bootstrap: 100\n", "  bootstrap: 100\n  decision: {threshold: 55}\n").replace(
        "  k: {counterfactual: 2, group: 2, merit: 2}\n", "")
    c = compile_spec(write_spec(threshold + "  ll144:\n" + WHY + SEX, **{"scores.csv": SCORES}))
    assert c.resolved["analysis"]["ll144"]["rate"] == "selection"
    assert "ll144" not in compile_spec(write_spec(SPEC, **{"scores.csv": SCORES})).resolved["analysis"]


def test_scoring_compares_on_the_score_grid():
    """0.1 + 0.2 and 0.3 are one score on a 0.1 grid: both sit at the median, neither above it (raw floats
    would put 0.30000000000000004 above 0.3)."""
    from runtime.analysis.ll144 import ll144_rows

    frame = pd.DataFrame({"system": "s", "condition": "default", "group": "j", "unit": ["a", "b", "c", "d", "e"],
                          "sex": ["male", "male", "female", "female", "female"], "race_ethnicity": "unknown",
                          "score": [0.1 + 0.2, 0.5, 0.3, 0.1, 0.3], "selected": np.nan})
    got = ll144_rows(frame, basis="scoring", sex=SEX_IDS, race=None, n_bootstrap=0).set_index("category")
    assert got.loc["male", "n_at_median"] == 1 and got.loc["female", "n_at_median"] == 2
    assert got.loc["male", "n_positive"] == 1 and got.loc["female", "n_positive"] == 0
    declared = ll144_rows(frame, basis="scoring", sex=SEX_IDS, race=None, n_bootstrap=0, resolution={"s": 0.1})
    pd.testing.assert_frame_equal(got.reset_index()[declared.columns], declared)


def test_section_marks_small_intersectional_cells_and_the_reference():
    """Intersectional cells with n <= 2 are marked as identifying if posted; the reference row is named; the
    EEO-1 labels are printed; without a race mapping the section says why there is no race table."""
    from compiler.blocks.ll144 import LABELS
    from runtime.analysis.ll144 import ll144_rows
    from runtime.report.sections import ORDER
    from runtime.report.sections.ll144 import ll144_section

    table = ll144_rows(_small_frame(), basis="selection", sex=SEX_IDS, race=RACE_IDS, n_bootstrap=0)
    block = {"rate": "selection", "why_test_data": "w", "bootstrap": 0,
             "sex": {"axis": "a", "levels": {"M": "male", "F": "female"}},
             "race_ethnicity": {"axis": "b", "levels": {"x": "asian"}}}
    sec = ll144_section(table, block=block, resolved={"analysis": {"decision": {"threshold": 1}}}, paired=True,
                        labels=LABELS)
    assert sec.id == "ll144" and sec.order == ORDER["ll144"] == 550 and sec.context["threshold"] == "1"
    rows = {r["category"]: r for t in sec.context["groups"][0]["tables"] for r in t["rows"]}
    assert rows["Male Asian"]["identifying"] and not rows["Female White"]["identifying"]  # n = 1 and n = 30
    assert rows["Male Asian"]["reason"] == "highest rate: the reference of the ratios"
    assert rows["Black or African American"]["ratio"] == "0.2703"
    no_race = ll144_section(ll144_rows(_small_frame(), basis="selection", sex=SEX_IDS, race=None, n_bootstrap=0),
                            block={**block, "race_ethnicity": None}, resolved={"analysis": {}}, paired=True,
                            labels=LABELS)
    assert no_race.context["no_race"] and [t["title"] for t in no_race.context["groups"][0]["tables"]] == ["Sex"]
