"""A vendor's score export (issue 15): every problem before the lock, in one pass; vendor column names,
delimiters and boolean words; the same scores in a vendor's format give the same metrics."""

from __future__ import annotations

import json

import pytest

from compiler.score_file import guess_columns, likely_scale, parse_bool, read_score_file, sniff_delimiter
from conftest import run_cli

VARIANTS = ["white_male", "white_female", "black_male", "black_female"]

SPEC = """\
audit: vendor-export
title: Audit of a vendor's score export
seed: 11
axes:
  race:
    slot: name
    levels: [white, black]
    cues: {white: [""], black: [""]}
  sex:
    slot: residence
    levels: [male, female]
    cues: {male: [""], female: [""]}
variants:
  reference: white_male
  design: explicit
  table:
    white_male: {race: white, sex: male}
    white_female: {race: white, sex: female}
    black_male: {race: black, sex: male}
    black_female: {race: black, sex: female}
jobs: [{id: req-101}, {id: req-102}, {id: req-103}]
systems:
  - id: vendor
    kind: precomputed
    path: export.csv
    score_range: [0, 100]
analysis:
  k: {counterfactual: 5, group: 5, merit: 5}
  bootstrap: 200
"""
MAPPING = "    columns: {job_id: requisition_id, cv_id: candidate_id, variant: persona, score: match_score}\n"


def vendor_rows(n: int = 8) -> list[list[str]]:
    """3 jobs x n candidates x 4 variants, integer scores 0-100, a qualified flag in words."""
    rows = []
    for j, job in enumerate(["req-101", "req-102", "req-103"]):
        for c in range(n):
            base = 30 + (7 * c + 11 * j) % 60
            for v, variant in enumerate(VARIANTS):
                rows.append([job, f"cand-{c:03d}", variant, str(base - 2 * v + (c % 3)),
                             "TRUE" if c % 3 == 0 else "false"])
    return rows


def write_export(path, rows, header=("requisition_id", "candidate_id", "persona", "match_score", "qualified"),
                 delimiter=";"):
    path.write_text("\n".join(delimiter.join(r) for r in [list(header)] + rows) + "\n")


def test_a_vendor_export_full_of_mistakes_is_reported_at_once_and_nothing_is_locked(tmp_path):
    """The issue's must-show: a variant typo, NA, 105, -3, a missing cell, a semicolon delimiter and
    vendor column names without a mapping, all named with their lines by one `audit validate` (exit 2);
    compile locks nothing; after the fixes the first compile is not an amendment."""
    (tmp_path / "spec.yaml").write_text(SPEC)
    rows = vendor_rows()
    good = [list(r) for r in rows]
    rows[4][2] = "black_femal"          # line 6: a typo
    rows[9][3] = "NA"                    # line 11
    rows[14][3] = "105"                  # line 16
    rows[21][3] = "-3"                   # line 23
    del rows[30]                         # a missing cell: (req-101, cand-007, black_male)
    write_export(tmp_path / "export.csv", rows)
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = proc.stderr.splitlines()
    where = "error: spec.yaml:25:11: systems[0].path: export.csv: "
    assert errors == [where + e for e in [
        "missing column(s) job_id, cv_id, variant, score; the header found (delimiter semicolon ';') is: "
        "requisition_id;candidate_id;persona;match_score;qualified; required: job_id, cv_id, variant, score "
        "(optional: is_true_match)",
        "the columns look like job_id ← requisition_id, cv_id ← candidate_id, variant ← persona, score ← "
        "match_score, is_true_match ← qualified: map them with `columns: {job_id: requisition_id, cv_id: "
        "candidate_id, variant: persona, score: match_score, is_true_match: qualified}` under systems[0] "
        "(the rows below were checked with this guess)",
        "unknown variant 'black_femal' (did you mean 'black_female'?) at line 6; variants in the spec: "
        "white_male, white_female, black_male, black_female",
        "score is empty or missing ('NA') at line 11",
        "score outside score_range [0, 100] at lines 16, 23 (values '105', '-3'); the file's scores run from "
        "-3 to 105. If that is the scale of the system, set systems[0].score_range: [low, high]",
        "2 missing (job_id, cv_id, variant) cell(s), e.g. (req-101, cand-001, white_male); "
        "(req-101, cand-007, black_male); every base candidate needs a score under every variant",
    ]]
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and not (tmp_path / "spec.lock.json").exists()
    # the fixes: the rows as exported correctly, and the mapping
    write_export(tmp_path / "export.csv", good)
    (tmp_path / "spec.yaml").write_text(SPEC.replace("    score_range: [0, 100]\n", "    score_range: [0, 100]\n"
                                                     + MAPPING.replace("}", ", is_true_match: qualified}")))
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lock = json.loads((tmp_path / "spec.lock.json").read_text())
    assert lock["amendments"] == []
    # the file fixes K: the plan counts it and compile says what it read and the scale in force
    assert json.loads((tmp_path / "spec.plan.json").read_text())["counts"]["base_candidates"] == 24
    assert ("score file: system 'vendor': export.csv, 96 rows, 24 base candidates over 3 jobs, delimiter "
            "semicolon, columns job_id ← requisition_id, cv_id ← candidate_id, variant ← persona, score ← "
            "match_score, is_true_match ← qualified; score_range [0, 100]") in proc.stdout.replace("\n", " ")


def test_a_changed_file_after_the_lock_is_an_amendment_naming_the_file_and_its_digests(tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC.replace("    score_range: [0, 100]\n", "    score_range: [0, 100]\n" + MAPPING))
    rows = vendor_rows()
    write_export(tmp_path / "export.csv", [r[:4] for r in rows], header=("requisition_id", "candidate_id",
                                                                         "persona", "match_score"))
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    old = json.loads((tmp_path / "spec.lock.json").read_text())["resolved_spec"]["systems"][0]["data"]["sha256"]
    rows[0][3] = "31"
    write_export(tmp_path / "export.csv", [r[:4] for r in rows], header=("requisition_id", "candidate_id",
                                                                         "persona", "match_score"))
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 3
    assert (f"  - systems[0].data.sha256: the input file export.csv changed (sha256 locked {old}, now "
            in proc.stderr)
    assert "The data is part of what was pre-registered, so a changed file is an amendment" in proc.stderr


def test_the_same_scores_in_a_vendors_format_give_the_same_metrics(tmp_path):
    """Semicolons, vendor column names (mapped) and TRUE/false against the product's own format."""
    rows = vendor_rows()
    vendor, plain = tmp_path / "vendor", tmp_path / "plain"
    for d in (vendor, plain):
        d.mkdir()
    (vendor / "spec.yaml").write_text(SPEC.replace("    score_range: [0, 100]\n", "    score_range: [0, 100]\n"
                                                   + MAPPING.replace("}", ", is_true_match: qualified}")))
    write_export(vendor / "export.csv", rows)
    (plain / "spec.yaml").write_text(SPEC)
    write_export(plain / "export.csv", [r[:4] + ["1" if r[4] == "TRUE" else "0"] for r in rows],
                 header=("job_id", "cv_id", "variant", "score", "is_true_match"), delimiter=",")
    out = {}
    for d in (vendor, plain):
        assert run_cli("compile", "spec.yaml", cwd=d).returncode == 0
        proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=d)
        assert proc.returncode in (0, 4), proc.stderr
        run = next((d / "reports" / "vendor-export").iterdir())
        out[d.name] = (run / "metrics.csv").read_bytes()
    assert out["vendor"] == out["plain"]
    assert b"recall_at_k" in out["plain"]


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_the_delimiter_is_sniffed(tmp_path, delimiter):
    rows = [r[:4] for r in vendor_rows(5)]
    write_export(tmp_path / "s.csv", rows, header=("job_id", "cv_id", "variant", "score"), delimiter=delimiter)
    found = read_score_file(tmp_path / "s.csv", jobs=["req-101", "req-102", "req-103"], variants=VARIANTS,
                            score_range=(0, 100))
    assert found.delimiter == delimiter and found.problems == [] and len(found.rows) == 60
    assert found.base_per_job == {"req-101": 5, "req-102": 5, "req-103": 5}
    assert found.warnings == ["no is_true_match column: the merit metrics (recall@K, nDCG@K, equal opportunity) "
                              "will be N/A for all 60 rows (lines 2–61); add the column (1 = the candidate "
                              "matches the job) to audit them"]


def test_booleans_in_words_any_case():
    assert [parse_bool(x) for x in ("1", "TRUE", " yes ", "True", "0", "false", "No", "2", "y", "")] == \
        [1, 1, 1, 1, 0, 0, 0, None, None, None]


def test_a_mapped_column_that_is_absent_quotes_the_header(tmp_path):
    write_export(tmp_path / "s.csv", [r[:4] for r in vendor_rows(5)], header=("req", "cand", "persona", "score"))
    found = read_score_file(tmp_path / "s.csv", jobs=["req-101", "req-102", "req-103"], variants=VARIANTS,
                            score_range=(0, 100), columns={"job_id": "requisition", "cv_id": "cand",
                                                           "variant": "persona"}, key="systems[1]")
    assert found.problems[0] == ("systems[1].columns.job_id: the file has no column 'requisition'; the header "
                                 "found (delimiter semicolon ';') is: req;cand;persona;score")
    assert found.problems[1].startswith("missing column(s) job_id;")


def test_too_few_base_candidates_for_k_is_found_before_the_lock(tmp_path):
    write_export(tmp_path / "s.csv", [r[:4] for r in vendor_rows(4)], header=("job_id", "cv_id", "variant", "score"))
    found = read_score_file(tmp_path / "s.csv", jobs=["req-101", "req-102", "req-103"], variants=VARIANTS,
                            score_range=(0, 100), k={"counterfactual": 5, "group": 5, "merit": 6})
    assert found.problems == [f"job 'req-10{j}' has 4 base candidates, fewer than the largest analysis.k "
                              f"(merit: 6); every shortlist would hold the whole pool" for j in (1, 2, 3)]


def test_the_suggested_scale_is_the_tightest_round_range_holding_every_score():
    """Issue 37 §3: 0-1, 1-5, 0-5, 1-7, 1-10, 0-10, 0-100, the first (tightest) holding every score."""
    assert likely_scale([0.2, 0.9]) == (0.0, 1.0)
    assert likely_scale([3, 4, 5, 1]) == (1.0, 5.0)
    assert likely_scale([0, 4, 5]) == (0.0, 5.0)
    assert likely_scale([1, 6.5, 7]) == (1.0, 7.0)
    assert likely_scale([1, 2, 8, 9]) == (1.0, 10.0)
    assert likely_scale([0, 6.4, 9.5, 1, 10]) == (0.0, 10.0)  # a 0-10 export: not "most lie in [1, 10]"
    assert likely_scale([37, 28, 52, 100, 64]) == (0.0, 100.0)
    assert likely_scale([37, 28, 52, 105]) is None  # no round scale holds 105
    assert likely_scale([-500, 2000]) is None and likely_scale([]) is None


def test_columns_are_guessed_from_contents_and_names():
    header = ["persona", "req", "candidate_ref", "fit_score", "qualified"]
    records = [["black_male", "req-101", "a1", "55", "yes"], ["white_male", "req-101", "a1", "52", "no"]]
    assert guess_columns(header, records, jobs=["req-101"], variants=VARIANTS) == {
        "variant": "persona", "job_id": "req", "is_true_match": "qualified", "score": "fit_score",
        "cv_id": "candidate_ref"}


def test_sniffing_a_one_column_file_falls_back_to_comma():
    assert sniff_delimiter("score\n1\n2\n") == ","
    assert sniff_delimiter("a;b;c\n1;2;3\n") == ";"


RACE_SEX = """\
audit: vendor-race-sex
title: Audit of a vendor's export, race x sex by first name
seed: 5
axes:
  race:
    levels: [white, black]
    description: First names from the lists of a published audit study, chosen by the vendor.
    examples: {white: [Emily Walsh], black: [Lakisha Washington]}
  sex:
    levels: [male, female]
    description: The same first name signals sex.
variants:
  reference: white_male
  design: explicit
  table:
    white_male: {race: white, sex: male}
    white_female: {race: white, sex: female}
    black_male: {race: black, sex: male}
    black_female: {race: black, sex: female}
jobs: [{id: req-101}, {id: req-102}, {id: req-103}]
systems:
  - id: vendor
    kind: precomputed
    path: export.csv
    score_range: [0, 100]
    columns: {job_id: requisition_id, cv_id: candidate_id, variant: persona, score: match_score, is_true_match: qualified}
source:
  producer: Acme Talent Ltd
  system: Acme Match
  version: "4.2"
  exported: 2026-11-20
  variants_made: The vendor replaced the candidate's first name, one name per race x sex cell; nothing else changed.
  contact: liaison@acme.example
analysis:
  k: {counterfactual: 5, group: 5, merit: 5}
  bootstrap: 200
"""


def test_a_race_by_sex_score_file_without_slots_is_described_as_the_vendor_made_it(tmp_path):
    """One name cue realises two axes; no slot is written, none is signed; the report shows the source
    block and the level descriptions, and has no drift section, saying why."""
    (tmp_path / "spec.yaml").write_text(RACE_SEX)
    write_export(tmp_path / "export.csv", vendor_rows())
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    # the one warning: the metric suite's coverage at the nearest simulated design (issue 39 §8)
    warnings = [ln for ln in proc.stderr.splitlines() if "warning" in ln]
    assert proc.returncode == 0 and len(warnings) == 1, proc.stderr
    assert warnings[0].startswith("warning: spec.yaml:") and ": jobs: the 95% intervals of " in warnings[0]
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path)
    assert proc.returncode in (0, 4), proc.stderr
    run = next((tmp_path / "reports" / "vendor-race-sex").iterdir())
    manifest = (run / "manifest.json").read_text()
    lock = json.loads((tmp_path / "spec.lock.json").read_text())
    assert "slot" not in json.dumps(lock["resolved_spec"]["axes"]) and '"slot"' not in manifest
    assert lock["resolved_spec"]["source"]["exported"] == "2026-11-20"
    assert not (run / "drift.csv").exists()
    html = (run / "report.html").read_text()
    assert 'id="drift"' not in html and "Qualification drift (seed 000 §3.1.2) is not computed" in html
    assert "It received no résumé texts" in html and "Texts embedded" not in html
    assert "audit-compiler did not generate or score the résumés of this audit" in html
    # page 1's design warnings (issue 39 §8): the small pools and the coverage at the nearest simulated design
    assert "Design warning: Fewer than 40 base candidates in job(s) req-101 (" in html
    assert "Design warning: The 95% intervals of " in html
    for text in ("Acme Talent Ltd", "Acme Match", "4.2", "2026-11-20", "liaison@acme.example",
                 "First names from the lists of a published audit study", "“Lakisha Washington”"):
        assert text in html, text


def test_a_generated_design_still_needs_a_slot_and_cues_per_axis(tmp_path):
    spec = RACE_SEX.replace("jobs: [", "candidates: {base_per_job: 6, matching_per_job: 2}\njobs: [")
    spec = spec.replace("  - id: vendor\n    kind: precomputed", "  - id: minilm\n    kind: embedding\n  - id: vendor\n    kind: precomputed")
    (tmp_path / "spec.yaml").write_text(spec)
    write_export(tmp_path / "export.csv", vendor_rows())
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2
    for axis, line in (("race", 5), ("sex", 9)):
        assert (f"spec.yaml:{line}:3: axes.{axis}: axis '{axis}' needs a slot: the tool writes its cue into the "
                f"résumés it generates") in proc.stderr
        assert f"spec.yaml:{line}:3: axes.{axis}: axis '{axis}' needs cues" in proc.stderr


def test_a_source_block_without_a_score_file_is_refused(tmp_path):
    spec = RACE_SEX.replace("  - id: vendor\n    kind: precomputed\n    path: export.csv\n    score_range: [0, 100]\n"
                            "    columns: {job_id: requisition_id, cv_id: candidate_id, variant: persona, score: "
                            "match_score, is_true_match: qualified}\n", "  - {id: minilm, kind: embedding}\n")
    (tmp_path / "spec.yaml").write_text(spec)
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2
    assert "source: source describes a score export, but no system is precomputed" in proc.stderr
