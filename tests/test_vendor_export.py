"""A vendor's export audited as it came (issue 37 §1-§3): ignored columns, value maps, the variant from
two columns, decimal commas, a trailing delimiter, CRLF and a BOM, with no edit of the file; every
problem of a bad file in one validate; hints."""

from __future__ import annotations

import hashlib
import json

import pytest

from compiler.score_file import closest, hint, parse_number
from conftest import run_cli

JOBS = ["req-40117", "req-40118", "req-40119"]
#: variant id -> (race level, sex level), and how the vendor writes the levels
VARIANTS = {"WHITE_M": ("WHITE", "M"), "WHITE_F": ("WHITE", "F"), "BLACK_M": ("BLACK", "M"),
            "BLACK_F": ("BLACK", "F")}
RACE = {"WHITE": "White American", "BLACK": "Black American"}
SEX = {"M": "Male", "F": "Female"}

SPEC = """\
audit: vendor-as-sent
title: A vendor's export audited as it came
seed: 37
axes:
  race:
    levels: [WHITE, BLACK]
    description: First names chosen by the vendor.
  sex:
    levels: [M, F]
    description: The same first name signals sex.
variants:
  reference: WHITE_M
  design: explicit
  table:
    WHITE_M: {race: WHITE, sex: M}
    WHITE_F: {race: WHITE, sex: F}
    BLACK_M: {race: BLACK, sex: M}
    BLACK_F: {race: BLACK, sex: F}
jobs: [{id: req-40117}, {id: req-40118}, {id: req-40119}]
systems:
  - id: vendor
    kind: precomputed
    path: export.csv
    score_range: [0, 10]
%s
source:
  producer: Acme Talent Ltd
  system: Acme Match
  version: "4.2"
  exported: "2026-11-20"
  variants_made: The vendor replaced the candidate's first name; nothing else changed.
  contact: liaison@acme.example
analysis:
  k: {counterfactual: 5, group: 5, merit: 5}
  bootstrap: 100
"""
MAPPING = """\
    columns: {job_id: Requisition, cv_id: Candidate, score: Score, is_true_match: Meets Min Quals}
    variant_from: {race: Race, sex: Gender}
    ignore_columns: [Model Version]
    values:
      Race: {White American: WHITE, Black American: BLACK}
      Gender: {Male: M, Female: F}
    case_insensitive: true
    decimal: ","
    delimiter: ";\""""


def scores(n: int = 8) -> list[tuple[str, str, str, float, int]]:
    """3 jobs x n candidates x 4 variants: (job, candidate, variant, score on 0-10 with one decimal, match)."""
    out = []
    for j, job in enumerate(JOBS):
        for c in range(n):
            base = 3.0 + ((7 * c + 11 * j) % 60) / 10
            for v, variant in enumerate(VARIANTS):
                out.append((job, f"cand-{c:03d}", variant, round(base - 0.2 * v + 0.1 * (c % 3), 1), int(c % 3 == 0)))
    return out


def vendor_text(rows) -> str:
    """The export as the vendor sends it: BOM, CRLF, ';' with a trailing ';', upper-case requisitions,
    race and sex in two columns, labels with spaces, decimal commas, Yes/No flags, an extra column."""
    lines = ["Requisition;Candidate;Race;Gender;Score;Meets Min Quals;Model Version;"]
    for job, cand, variant, score, match in rows:
        race, sex = VARIANTS[variant]
        lines.append(f"{job.upper()};{cand};{RACE[race]};{SEX[sex]};{f'{score:.1f}'.replace('.', ',')};"
                     f"{'Yes' if match else 'No'};v4.2.1;")
    return "\ufeff" + "\r\n".join(lines) + "\r\n"


def product_text(rows) -> str:
    return "job_id,cv_id,variant,score,is_true_match\n" + "".join(
        f"{j},{c},{v},{s:.1f},{m}\n" for j, c, v, s, m in rows)


def test_the_vendors_export_audits_unedited_with_the_same_metrics_and_the_digest_of_the_file_received(tmp_path):
    rows = scores()
    vendor, plain = tmp_path / "vendor", tmp_path / "plain"
    vendor.mkdir(), plain.mkdir()
    (vendor / "spec.yaml").write_text(SPEC % MAPPING)
    (vendor / "export.csv").write_bytes(vendor_text(rows).encode())
    received = (vendor / "export.csv").read_bytes()
    (plain / "spec.yaml").write_text(SPEC % "")
    (plain / "export.csv").write_text(product_text(rows))
    proc = run_cli("validate", "spec.yaml", cwd=vendor)
    assert proc.returncode == 0, proc.stderr
    assert "every line of the file ends with the delimiter ';'" in proc.stderr  # said once, as a note
    assert proc.stderr.count("ends with the delimiter") == 1
    out = {}
    for d in (vendor, plain):
        proc = run_cli("compile", "spec.yaml", cwd=d)
        assert proc.returncode == 0, proc.stderr
        if d is vendor:
            summary = proc.stdout.replace("\n", " ")
            assert "ignored column(s) 'Model Version'" in summary and "decimal mark ','" in summary
        proc = run_cli("execute", "spec.yaml", "--quiet", "--unsigned", "--no-pdf", cwd=d)
        assert proc.returncode in (0, 4), proc.stderr
        run = next((d / "reports" / "vendor-as-sent").iterdir())
        out[d.name] = (run / "metrics.csv").read_bytes()
        if d is vendor:
            html = (run / "report.html").read_text()
            info = json.loads((run / "run.json").read_text())["systems_info"]["vendor"]
    assert out["vendor"] == out["plain"]
    assert b"recall_at_k" in out["plain"]
    assert (vendor / "export.csv").read_bytes() == received  # never modified
    lock = json.loads((vendor / "spec.lock.json").read_text())
    system = lock["resolved_spec"]["systems"][0]
    assert system["data"]["sha256"] == hashlib.sha256(received).hexdigest()
    # the lock lists the mapping (the resolved spec), the run and the report how the file was read
    assert system["ignore_columns"] == ["Model Version"] and system["decimal"] == ","
    assert system["values"]["Gender"] == {"Male": "M", "Female": "F"}
    assert system["variant_from"] == {"race": "Race", "sex": "Gender"}
    assert info["read_as"]["trailing_delimiter"] is True and info["read_as"]["decimal"] == ","
    assert "Score file read as the vendor sent it" in html and "ignored column(s) &#39;Model Version&#39;" in html
    # the plain spec's resolved system holds none of the new keys (no shipped digest moves)
    plain_system = json.loads((plain / "spec.lock.json").read_text())["resolved_spec"]["systems"][0]
    assert not set(plain_system) & {"ignore_columns", "values", "case_insensitive", "variant_from", "decimal",
                                    "thousands"}


def test_a_bad_file_gives_all_five_problems_with_their_lines_in_one_validate(tmp_path):
    """Issue 37 §2: an unknown label, an empty score, 11.0 on 0-10, a duplicated row and a row one field
    short: all five, each with its line, exit 2, no lock."""
    rows = scores()
    text = vendor_text(rows).removeprefix("\ufeff").split("\r\n")
    text[3] = text[3].replace("Black American", "Blak American")   # line 4: an unknown label
    parts = text[6].split(";")
    parts[4] = ""
    text[6] = ";".join(parts)                                      # line 7: an empty score
    parts = text[9].split(";")
    parts[4] = "11,0"
    text[9] = ";".join(parts)                                      # line 10: 11.0 on a 0-10 scale
    text.insert(12, text[11])                                      # line 13: line 12 again
    text[20] = text[20].rsplit(";", 2)[0] + ";"                    # line 21: one field short
    (tmp_path / "spec.yaml").write_text(SPEC % MAPPING)
    (tmp_path / "export.csv").write_text("\r\n".join(text))
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    err = proc.stderr
    assert ("spec.yaml:29:13: systems[0].values.Race: export.csv: values.Race: 'Blak American' (did you mean "
            "'Black American'?) at line 4 is not mapped and is not a level of axis 'race' of the spec") in err
    assert "score is empty or missing ('') at line 7" in err
    assert "score outside score_range [0, 10] at line 10 (values '11,0')" in err
    assert "duplicate (job_id, cv_id, variant) at lines 12, 13" in err
    assert "line 21 has 7 field(s), the header has 8" in err and "the row is left out" in err
    assert not (tmp_path / "spec.lock.json").exists()
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 2
    assert not (tmp_path / "spec.lock.json").exists()


@pytest.mark.parametrize(("value", "allowed", "said"), [
    ("BLACK_FEMALE", ["WHITE_M", "WHITE_F", "BLACK_M", "BLACK_F"], ["BLACK_F"]),
    ("white_m", ["WHITE_M", "WHITE_F", "BLACK_M", "BLACK_F"], ["WHITE_M"]),
    ("WHITE_FM", ["WHITE_M", "WHITE_F", "BLACK_M", "BLACK_F"], ["WHITE_M", "WHITE_F"]),
    ("White Male", ["WHITE_M", "WHITE_F", "BLACK_M", "BLACK_F"], ["WHITE_M"]),
    ("REQ-40117", JOBS, ["req-40117"]),
    ("zzz", JOBS, []),
])
def test_hints_case_first_then_spelled_out_then_every_closest(value, allowed, said):
    assert closest(value, allowed) == said


def test_an_empty_cell_is_quoted_empty_and_two_candidates_are_both_named():
    assert hint("", ["a"]) == "''"
    assert hint("WHITE_FM", ["WHITE_M", "WHITE_F"]) == "'WHITE_FM' (did you mean 'WHITE_M' or 'WHITE_F'?)"


@pytest.mark.parametrize(("cell", "decimal", "thousands", "value"), [
    ("6,4", ",", "", 6.4), ("6.4", ",", "", None), ("1.234,5", ",", ".", 1234.5), ("12.34,5", ",", ".", None),
    ("1,234.5", ".", ",", 1234.5), ("-0,5e1", ",", "", -5.0), ("6,4", ".", "", None), ("1 234", ".", " ", 1234.0),
])
def test_decimal_commas_and_thousands_separators(cell, decimal, thousands, value):
    assert parse_number(cell, decimal, thousands) == value


def test_every_mapping_key_is_checked_with_its_location(tmp_path):
    """Issue 37 bad input: an ignored column absent from the header, a values map of a column that does
    not exist, a variant_from axis that is no axis, a map onto an id not in the spec, two file values onto
    one id making duplicates (named with their lines), decimal equal to the delimiter."""
    rows = scores(6)
    text = vendor_text(rows)
    lines = text.split("\r\n")
    lines.insert(5, lines[4].replace("Black American", "black american"))  # line 6: line 5 spelled another way
    (tmp_path / "export.csv").write_text("\r\n".join(lines))
    mapping = (MAPPING.replace("[Model Version]", "[Model Version, Region]")
               .replace("      Gender: {Male: M, Female: F}", "      Gender: {Male: M, Female: F, Femme: W}\n"
                        "      Sex: {Male: M}\n      Race: {White American: WHITE, Black American: BLACK, "
                        "black american: BLACK}")
               .replace("      Race: {White American: WHITE, Black American: BLACK}\n", "")
               .replace("variant_from: {race: Race, sex: Gender}", "variant_from: {race: Race, sex: Gender, "
                        "age: Age}")
               .replace('delimiter: ";"', 'delimiter: ","').replace('decimal: ","', 'decimal: ","'))
    (tmp_path / "spec.yaml").write_text(SPEC % mapping)
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    err = proc.stderr
    assert "systems[0].variant_from.age: 'age' is not an axis of the spec; axes: race, sex" in err
    assert "systems[0].decimal: the decimal mark ',' is the delimiter" in err
    # with ',' as the delimiter the file is one column: read it with ';' for the rest
    (tmp_path / "spec.yaml").write_text(SPEC % mapping.replace('delimiter: ","', 'delimiter: ";"')
                                        .replace(", age: Age", ""))
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    err = proc.stderr
    assert "systems[0].ignore_columns[1]: export.csv: ignore_columns: the file has no column 'Region'" in err
    assert "systems[0].values.Sex: export.csv: values: the file has no column 'Sex'" in err
    assert ("systems[0].values.Gender.Femme: export.csv: values.Gender: 'Femme' maps to 'W', which is not a "
            "level of axis 'sex' in the spec; allowed: M, F") in err
    assert ("systems[0].values.Race: export.csv: values.Race: 'Black American' (line 5), 'black american' "
            "(line 6) map to the same variant, which makes duplicate (job_id, cv_id, variant) rows at lines 5, 6") in err


def test_validate_guesses_is_true_match_and_variant_from(tmp_path):
    """Issue 37 §1: without a mapping, validate offers columns (is_true_match from `Meets Min Quals`) and
    variant_from when race and sex are in two columns."""
    (tmp_path / "spec.yaml").write_text(SPEC % "")
    (tmp_path / "export.csv").write_bytes(vendor_text(scores(6)).encode())
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert ("the columns look like job_id ← Requisition, cv_id ← Candidate, score ← Score, is_true_match ← Meets "
            "Min Quals, race ← Race, sex ← Gender: map them with `columns: {job_id: Requisition, cv_id: Candidate, "
            "score: Score, is_true_match: Meets Min Quals}` and `variant_from: {race: Race, sex: Gender}` under "
            "systems[0]") in proc.stderr
    assert "unknown column(s) 'Model Version'" in proc.stderr


@pytest.mark.parametrize("name", ["Meets Min Quals", "qualified", "meets_requirements"])
def test_the_match_flag_is_guessed_from_its_name(name):
    from compiler.score_file import guess_columns

    header = ["job_id", "cv_id", "variant", "score", name]
    records = [["j1", "c1", "BASE", "0.5", "Yes"], ["j1", "c1", "V01", "0.4", "No"]]
    assert guess_columns(header, records, jobs=["j1"], variants=["BASE", "V01"])["is_true_match"] == name
