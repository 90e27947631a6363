"""A vendor's export audited as it came (issue 37 §1-§3): ignored columns, value maps, the variant from
two columns, decimal commas, a trailing delimiter, CRLF and a BOM, with no edit of the file; every
problem of a bad file in one validate; hints."""

from __future__ import annotations

import hashlib
import json

import pytest

from compiler.score_file import FileMapping, closest, hint, parse_number, read_score_file
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
  bootstrap: 200
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
        proc = run_cli("execute", "spec.yaml", "--quiet", cwd=d)
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
