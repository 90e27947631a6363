"""Issue 32 §3 (name cues with a measured signal) and the blind export it was filed for (three requisitions of a
NYC employer, market us).

Every drawn name's signals are read back from ``../shared/data`` (SSA first names, Census 2010 surnames) by an
independent pandas query, not from the bundled tables the draw reads.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from conftest import run_cli

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "names").is_dir(), reason="../shared/data is not on this machine")

LEVELS = {f"{race}_{sex[0]}": (race, sex) for race in ("white", "black", "hispanic", "asian")
          for sex in ("male", "female")}

SPEC = """\
audit: ll144-requisitions
title: Three requisitions of a NYC employer, scored blind by the vendor
seed: 40117
axes:
  race_sex:
    slot: name
    levels: [{levels}]
    names:
      table: us
      floor: {floor}
      per_level: 12
      levels:
{names}
variants:
  reference: white_m
  design: one_at_a_time
jobs:
  - {{id: req-40117, onet: 53-7062.00, title: Warehouse associate}}
  - {{id: req-40118, onet: 13-2011.00, title: Accountant}}
  - {{id: req-40119, onet: 15-1252.00, title: Software engineer}}
candidates: {{generator: template, base_per_job: 8, matching_per_job: 4, market: us}}
systems:
  - {{id: vendor, kind: precomputed, path: vendor-scores.csv, blind: true, score_range: [0, 100]}}
analysis:
  k: {{counterfactual: 4, group: 4, merit: 4}}
  bootstrap: 200
"""


def spec_text(floor: float = 0.85) -> str:
    names = "\n".join(f"        {lv}: {{race: {race}, sex: {sex}}}" for lv, (race, sex) in LEVELS.items())
    return SPEC.format(levels=", ".join(LEVELS), floor=floor, names=names)


def read_csv(path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


@pytest.fixture(scope="module")
def resolved(tmp_path_factory):
    from compiler import compile_spec

    folder = tmp_path_factory.mktemp("names")
    (folder / "spec.yaml").write_text(spec_text())
    return compile_spec(folder / "spec.yaml").resolved


@needs_data
def test_every_name_cue_reaches_the_floor_read_back_from_the_source_tables(resolved):
    ssa = pd.read_csv(DATA / "names" / "ssa_first_names_by_decade_sex_min1000.csv")
    ssa = ssa[ssa["decade"] == 1990].pivot_table(index="name", columns="sex", values="count", aggfunc="sum",
                                                 fill_value=0)
    census = pd.read_csv(DATA / "surnames" / "census2010_surnames_top20000_race_pct.csv").set_index("surname")
    column = {"white": "pctwhite", "black": "pctblack", "hispanic": "pcthispanic", "asian": "pctapi"}
    axis = resolved["axes"]["race_sex"]
    block = axis["names"]
    assert block["floor"] == 0.85 and block["decade"] == 1990 and set(block["tables"]) == {
        "first_names.csv.gz", "surnames.csv.gz"}
    for level, (race, sex) in LEVELS.items():
        drawn = block["levels"][level]["names"]
        assert len(drawn) == 12 and len({d["name"] for d in drawn}) == 12
        assert axis["cues"][level] == [d["name"] for d in drawn]  # the drawn names are the level's cues
        for d in drawn:
            f, m = ssa.loc[d["first"], "F"], ssa.loc[d["first"], "M"]
            sex_signal = (f if sex == "female" else m) / (f + m)
            race_signal = census.loc[d["surname"], column[race]] / 100
            assert sex_signal >= 0.85 and race_signal >= 0.85, d
            assert d["sex_signal"] == pytest.approx(sex_signal, abs=1e-4)
            assert d["race_signal"] == pytest.approx(race_signal, abs=1e-4)
            assert d["name"].split(" ")[0] == d["first"] and d["name"].split(" ", 1)[1].upper() == d["surname"]


def test_the_draw_is_seeded_and_the_lock_lists_the_names(tmp_path, resolved):
    from compiler import compile_spec

    (tmp_path / "spec.yaml").write_text(spec_text())
    assert compile_spec(tmp_path / "spec.yaml").resolved == resolved
    (tmp_path / "spec.yaml").write_text(spec_text().replace("seed: 40117", "seed: 40118"))
    other = compile_spec(tmp_path / "spec.yaml").resolved["axes"]["race_sex"]["cues"]
    assert other != resolved["axes"]["race_sex"]["cues"]


def test_a_level_that_cannot_reach_the_floor_is_a_located_error(tmp_path):
    (tmp_path / "spec.yaml").write_text(spec_text(floor=0.98))
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    # Census 2010's most Black surname (top 20,000) is 97.75% Black: KOROMA
    assert "error: spec.yaml:15:18: axes.race_sex.names.levels.black_m: level 'black_m': no surname reaches the " \
           "floor 0.98 for race black; the strongest surname signal in the tables is 0.978 (Koroma); lower floor " \
           "to at most 0.97" in lines
    assert sum("names.levels.black_" in line for line in lines) == 2


def _vendor_score(text: str) -> int:
    return (int(hashlib.sha256(text.encode()).hexdigest()[:4], 16) + len(text)) % 101


@needs_data
def test_blind_export_of_three_requisitions_in_the_us_market_states_market_occupations_and_signals(tmp_path):
    (tmp_path / "spec.yaml").write_text(spec_text())
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)  # validates first
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("export", "spec.yaml", "--for-vendor", "to-vendor", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = read_csv(tmp_path / "to-vendor" / "resumes.csv")
    assert len(rows) == 3 * 8 * 8
    jobs = {r["job_id"]: r for r in read_csv(tmp_path / "to-vendor" / "jobs.csv")}
    assert jobs["req-40117"]["description"].startswith("# Warehouse associate\n")
    # no French marker in anything the vendor gets
    from runtime.generate.content import load

    fr = load("markets/fr.yaml")
    words = [c["name"] for c in fr["cities"]] + list(fr["markers"])
    sent = "\n".join(r["text"] for r in rows) + "\n".join(j["description"] for j in jobs.values())
    assert not re.findall("|".join(rf"(?<!\w){re.escape(w)}(?!\w)" for w in words), sent)
    (tmp_path / "vendor-scores.csv").write_text(
        "resume_id,score\n" + "".join(f"{r['resume_id']},{_vendor_score(r['text'])}\n" for r in rows))
    # the report is complete when report.html is written; the test stops the run there (the signed PDF is
    # covered by test_report_pdf.py)
    env_before = os.environ.get("AUDIT_TEST_KILL_AT")
    os.environ["AUDIT_TEST_KILL_AT"] = "report"
    try:
        run_cli("execute", "--unsigned", "spec.yaml", "--quiet", cwd=tmp_path)
    finally:
        if env_before is None:
            del os.environ["AUDIT_TEST_KILL_AT"]
        else:
            os.environ["AUDIT_TEST_KILL_AT"] = env_before
    run = sorted((tmp_path / "reports" / "ll144-requisitions").iterdir())[-1]
    html = (run / "report.html").read_text()
    text = re.sub(r"<[^>]+>", " ", html)
    assert "labour market" in text and "us: United States" in text
    for code, title in (("53-7062.00", "Laborers and Freight, Stock, and Material Movers, Hand"),
                        ("13-2011.00", "Accountants and Auditors"), ("15-1252.00", "Software Developers")):
        assert f"O*NET 29.3 {code} {title}" in text
    assert "USDOL/ETA" in text and "CC BY 4.0" in text
    cues = read_csv(run / "cues.csv")
    assert len(cues) == 8 * 12
    for c in cues:
        assert float(c["sex_signal"]) >= 0.85 and float(c["race_signal"]) >= 0.85
        assert (f"“{c['name']}” ({c['sex']} {float(c['sex_signal']):.2f}, {c['race']} "
                f"{float(c['race_signal']):.2f})") in html.replace("&#34;", '"')
    # every résumé of the run names one of its level's drawn names
    by_level = {}
    for c in cues:
        by_level.setdefault(c["level"], set()).add(c["name"])
    resumes = read_csv(run / "resumes.csv")
    assert all(r["text"].split("\n", 1)[0] in by_level[r["race_sex"]] for r in resumes)
