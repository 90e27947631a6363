"""Issue 32: résumés for any O*NET occupation (§1) in the labour market being audited (§2).

The generator's output is checked against the O*NET 29.3 files themselves (``../shared/data/onet-all/``,
read here with an independent pandas query), not against the bundled package data it reads.
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources
from pathlib import Path

import pandas as pd
import pytest

from conftest import run_cli

ONET = Path(__file__).resolve().parents[2] / "shared" / "data" / "onet-all"
needs_onet = pytest.mark.skipif(not ONET.is_dir(), reason="../shared/data/onet-all is not on this machine")

#: Ten occupations across job zones 1-5 (the zone is read from job_zones.csv.gz in the test).
CODES = ("35-9021.00", "45-2092.00", "53-7062.00", "43-4051.00", "29-2061.00", "49-3023.00", "29-1141.00",
         "13-2011.00", "15-1252.00", "25-1022.00")
K, M = 6, 3


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(ONET / f"{name}.csv.gz", dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def onet_files():
    zones = _read("job_zones").set_index("O*NET-SOC Code")["Job Zone"].astype(int)
    tasks = _read("task_statements")
    tasks = tasks.assign(tid=tasks["Task ID"].astype(int)).set_index(["O*NET-SOC Code", "tid"])["Task"]
    return zones, tasks


@pytest.fixture(scope="module")
def generated():
    from runtime.generate import generate_base_candidates

    return {(code, market): generate_base_candidates(job_id=f"j{code[:2]}", family=None, onet=code, k=K, m=M,
                                                     seed=32, market=market)
            for code in CODES for market in ("fr", "us")}


def _same_task(bullet: str, task: str) -> bool:
    """The duty is the task statement with only its opening verbs changed (written in the past tense)."""
    b, t = bullet.split(" "), task.split(" ")
    differ = [i for i, (x, y) in enumerate(zip(b, t)) if x != y]
    # "Set up" stays; "Plant, spray, ..., and prune plants" -> six verbs in the first eleven words
    return len(b) == len(t) and (not differ or (max(differ) < 12 and all(
        b[i].rstrip(",").lower()[:1] == t[i].rstrip(",").lower()[:1] or t[i].lower() in ("be", "go")
        for i in differ)))


@needs_onet
def test_ten_occupations_across_the_job_zones_match_and_trace_to_their_task_statements(generated, onet_files):
    from runtime.generate import base_text

    zones, tasks = onet_files
    assert sorted({int(zones[c]) for c in CODES}) == [1, 2, 3, 4, 5]
    for (code, market), bases in generated.items():
        assert len(bases) == K and sum(b.is_true_match for b in bases) == M
        for b in bases:
            profile = b.profile_family
            if b.is_true_match:
                assert profile == code
            else:  # seed 000 §3.1.2 for an occupation: another major group and a different job zone
                assert profile[:2] != code[:2] and zones[profile] != zones[code]
            for role in b.sections.experience:
                assert len(role.bullets) == len(role.task_ids) > 0
                for bullet, tid in zip(role.bullets, role.task_ids):
                    assert _same_task(bullet, tasks[(profile, tid)]), (profile, tid, bullet)
            text = base_text(b)
            zone = int(zones[profile])
            if zone == 1:  # a short résumé with no degree line
                assert "\nEDUCATION\n" not in text and len(b.sections.experience) <= 2
            if zone >= 4:
                assert "\nEDUCATION\n" in text
            assert "\nSKILLS\n" in text and b.sections.competencies
    # the past tense of a few opening verbs, by hand
    from runtime.generate.onet import past_tense
    assert past_tense("Track, compile, and analyze Web site usage data.") == \
        "Tracked, compiled, and analyzed Web site usage data."
    assert past_tense("Direct or coordinate activities.") == "Directed or coordinated activities."
    assert past_tense("Plan and ship goods.") == "Planned and shipped goods."


@needs_onet
def test_the_same_spec_and_seed_give_the_same_bytes_and_the_markets_differ(generated):
    from runtime.generate import base_text, generate_base_candidates

    again = generate_base_candidates(job_id="j53", family=None, onet="53-7062.00", k=K, m=M, seed=32, market="us")
    assert [base_text(b) for b in again] == [base_text(b) for b in generated["53-7062.00", "us"]]
    other = generate_base_candidates(job_id="j53", family=None, onet="53-7062.00", k=K, m=M, seed=33, market="us")
    assert [base_text(b) for b in other] != [base_text(b) for b in again]


def _fr_words() -> list[str]:
    """Every French marker of the fr market: its cities, degree names, schools, employers and markers."""
    from runtime.generate.content import load

    fr = load("markets/fr.yaml")
    words = [c["name"] for c in fr["cities"]] + list(fr["markers"]) + list(fr["employers"])
    words += [s for level in fr["schools"].values() for s in level]
    fields = list(load("onet.yaml")["fields"].values()) + [load("onet.yaml")["default_field"]]
    words += [d.format(field=f) for level in fr["degrees"].values() for d in level for f in fields]
    words += load("common.yaml")["cities"] + ["months' notice", "month's notice", "DSCG", "RQTH"]
    return sorted({w for w in words if w})


@needs_onet
def test_under_market_us_no_resume_holds_a_french_marker(generated):
    from runtime.generate import FAMILY_IDS, base_text, generate_base_candidates

    # the ten occupations and the five hand-written families, written for the US market
    families = [b for fam in FAMILY_IDS for b in generate_base_candidates(job_id=fam, family=fam, k=20, m=10,
                                                                          seed=32, market="us")]
    assert {b.profile_family for b in families} == set(FAMILY_IDS)
    pattern = re.compile("|".join(rf"(?<!\w){re.escape(w)}(?!\w)" for w in _fr_words()))
    us = "\n".join([base_text(b) for (code, market), bases in generated.items() if market == "us" for b in bases]
                   + [base_text(b) for b in families])
    assert pattern.findall(us) == []
    assert re.findall(r"[À-ÿ]", us) == []  # not one accented letter
    assert "two weeks' notice" in us and "New York, NY" in us
    fr = "\n".join(base_text(b) for (code, market), bases in generated.items() if market == "fr" for b in bases)
    assert len(set(pattern.findall(fr))) > 10  # the word lists do catch a French résumé


def test_the_hand_written_families_keep_their_bytes():
    from runtime.generate import FAMILY_IDS, example_axes, example_variants, generate_job_matrix

    h = hashlib.sha256()
    for fam in FAMILY_IDS:
        frame = generate_job_matrix(job_id=fam, family=fam, k=40, m=20, seed=20251129, axes=example_axes(),
                                    variants=example_variants())
        h.update(frame.to_csv(index=False).encode())
    # the digest of main before issue 32 (commit 2f905ba)
    assert h.hexdigest() == "8cec45669c4222de6fc2fbb4513d4bedee63a900ff3ff32d3a9d05ba34677b13"


def test_the_lock_records_the_onet_tables_and_the_posting_is_written(tmp_path):
    from compiler import onet

    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    proc = run_cli("compile", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    import json

    jobs = json.loads((tmp_path / "spec.lock.json").read_text())["resolved_spec"]["jobs"]
    root = resources.files("compiler.onet")
    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in root.iterdir() if p.name.endswith(".gz")}
    assert jobs[0]["onet"] == {"code": "53-7062.00", "title": "Laborers and Freight, Stock, and Material Movers, Hand",
                               "ratings_from": "53-7062.00", "release": "29.3", "tables": digests}
    assert jobs[1]["onet"]["ratings_from"] == "15-1251.00"  # O*NET 29.3 rates no skills for 15-1252.00
    assert set(digests) == {f"{t}.csv.gz" for t in onet.TABLES}
    from runtime.generate.onet import posting

    text = posting("53-7062.00", "Warehouse associate")
    assert text.startswith("# Warehouse associate\n") and "- You will sort cargo before loading and unloading." in text


SPEC = """\
audit: onet-jobs
title: Any O*NET occupation
seed: 32
axes:
  sex_gender:
    slot: name
    levels: [M, F]
    cues: {M: [John Smith], F: [Jane Smith]}
variants:
  reference: BASE
  table:
    BASE: {sex_gender: M}
    V01: {sex_gender: F}
jobs:
  - {id: req-40117, onet: 53-7062.00, title: Warehouse associate}
  - {id: req-2, onet: 15-1252.00, title: Software engineer}
candidates: {generator: template, base_per_job: 4, matching_per_job: 2, market: us}
systems:
  - {id: vendor, kind: precomputed, path: vendor-scores.csv, blind: true, score_range: [0, 100]}
analysis:
  k: {counterfactual: 2, group: 2, merit: 2}
"""
