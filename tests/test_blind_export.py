"""Blind scoring by a vendor (issue 15, part 4): ``audit export SPEC --for-vendor DIR``.

The vendor's file must hold no column, id or row order that reveals a variant; scores returned by
opaque id must give the same ``metrics.csv`` as the same scores keyed by the real ids.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re

from conftest import TINY_SCORES, TINY_SPEC, run_cli

SPEC = """\
audit: blind-vendor
title: A vendor scores the tool's résumés blind
seed: 21
axes:
  sex_gender:
    slot: name
    levels: [M, F]
    cues: {{M: [John Smith, David Miller], F: [Jane Smith, Mary Miller]}}
variants:
  reference: BASE
  table:
    BASE: {{sex_gender: M}}
    V01: {{sex_gender: F}}
jobs:
  - {{id: data-analyst, title: Data Analyst, description: Writes SQL and builds dashboards.}}
  - {{id: accountant, title: Accountant, description: Prepares ledgers and audits accounts.}}
candidates: {{generator: template, base_per_job: 8, matching_per_job: 4}}
systems:
  - {system}
analysis:
  k: {{counterfactual: 3, group: 3, merit: 3}}
  bootstrap: 200
"""
BLIND = "{id: vendor, kind: precomputed, path: vendor-scores.csv, blind: true, score_range: [0, 100]}"
PLAIN = "{id: vendor, kind: precomputed, path: real-ids.csv, score_range: [0, 100]}"


def vendor_score(text: str) -> int:
    """The vendor's system: any deterministic function of the text (here: a hash and the length)."""
    return (int(hashlib.sha256(text.encode()).hexdigest()[:4], 16) + len(text)) % 101


def read_csv(path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_the_vendor_file_reveals_nothing_and_blind_scores_give_the_same_metrics(tmp_path):
    blind, plain = tmp_path / "blind", tmp_path / "plain"
    for d, system in ((blind, BLIND), (plain, PLAIN)):
        d.mkdir()
        (d / "spec.yaml").write_text(SPEC.format(system=system))
    # before any export: compile locks the spec without the vendor's file
    proc = run_cli("compile", "spec.yaml", cwd=blind)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=blind)
    assert proc.returncode == 2 and "vendor-scores.csv: system 'vendor' is blind and its file is not there yet" \
        in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("export", "spec.yaml", "--for-vendor", "to-vendor", "--quiet", cwd=blind)
    assert proc.returncode == 0, proc.stderr
    assert "32 résumés for 2 jobs, shuffled" in proc.stdout
    vendor_file = blind / "to-vendor" / "resumes.csv"
    rows = read_csv(vendor_file)
    # no column but the id, the job and the text
    assert list(rows[0]) == ["resume_id", "job_id", "text"] and len(rows) == 2 * 8 * 2
    # opaque ids: R + 10 hex digits, unique, none naming a candidate, a variant or a level
    ids = [r["resume_id"] for r in rows]
    assert all(re.fullmatch(r"R[0-9A-F]{10}", i) for i in ids) and len(set(ids)) == len(ids)
    # the key (kept in the store, never in the vendor's folder) maps the ids back
    assert sorted(p.name for p in (blind / "to-vendor").iterdir()) == ["README.txt", "jobs.csv", "resumes.csv"]
    keys = [json.loads(p.read_text()) for p in (blind / ".audit-store" / "tasks").glob("blind-key-*.json")]
    assert len(keys) == 1
    text = vendor_file.read_text(encoding="utf-8")
    for word in ("BASE", "V01", "sex_gender", "cv_id", "variant", "c01", "-c0"):
        assert word not in text.split("\n", 1)[0] and not any(word in i for i in ids)
    # a second export of the same résumés writes the same bytes (same key, same order)
    before = vendor_file.read_bytes()
    assert run_cli("export", "spec.yaml", "--for-vendor", "to-vendor", "--quiet", cwd=blind).returncode == 0
    assert vendor_file.read_bytes() == before

    # the vendor scores each text and returns resume_id,score in its own order
    scored = sorted(((r["resume_id"], vendor_score(r["text"])) for r in rows), key=lambda t: t[1])
    (blind / "elsewhere").mkdir()
    (blind / "elsewhere" / "notes.txt").write_text("private notes")
    proc = run_cli("export", "spec.yaml", "--for-vendor", "elsewhere", "--quiet", cwd=blind)
    assert proc.returncode == 2 and "holds notes.txt, which would go to the vendor" in proc.stderr
    proc = run_cli("export", "spec.yaml", "--for-vendor", "spec.yaml", "--quiet", cwd=blind)
    assert proc.returncode == 2 and "is a file, not a folder" in proc.stderr and "Traceback" not in proc.stderr
    (blind / "vendor-scores.csv").write_text("resume_id,score\n" + "".join(f"{i},{s}\n" for i, s in scored))
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=blind)
    assert proc.returncode in (0, 4), proc.stderr
    run = sorted((blind / "reports" / "blind-vendor").iterdir())[-1]  # the first, failed run is kept
    key = read_csv(run / "blind_key.csv")
    assert [r["resume_id"] for r in key] == ids  # the key is sealed into the run, in the vendor file's order
    resumes = read_csv(run / "resumes.csv")
    order = [(r["job_id"], r["cv_id"], r["variant"]) for r in resumes]
    shuffled = [(r["job_id"], r["cv_id"], r["variant"]) for r in key]
    assert shuffled != order and shuffled != sorted(order)
    by_id = [(r["job_id"], r["cv_id"], r["variant"]) for r in sorted(key, key=lambda r: r["resume_id"])]
    assert by_id != order and by_id != sorted(order)  # sorting by id does not restore the order either
    assert "blind_key.csv" in (run / "manifest.json").read_text()
    info = json.loads((run / "run.json").read_text())["systems_info"]["vendor"]["blind"]
    assert info["file_sha256"] == hashlib.sha256((blind / "vendor-scores.csv").read_bytes()).hexdigest()
    html = (run / "report.html").read_text()
    assert "Blind scoring by the vendor" in html and info["file_sha256"] in html

    assert (run / "blind_scores_vendor.csv").read_bytes() == (blind / "vendor-scores.csv").read_bytes()
    assert "blind_scores_vendor.csv" in (run / "manifest.json").read_text()

    # a changed returned file is refused, naming both digests, until it is accepted with a reason
    first = info["file_sha256"]
    changed = (blind / "vendor-scores.csv").read_text().replace(f"{scored[0][0]},{scored[0][1]}",
                                                                 f"{scored[0][0]},{scored[0][1] + 1}")
    (blind / "vendor-scores.csv").write_text(changed)
    second = hashlib.sha256(changed.encode()).hexdigest()
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=blind)
    assert proc.returncode == 3 and "the vendor's returned file changed since it was first read" in proc.stderr
    assert f"sha256 {first} -> {second}" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", "--accept-vendor-file", "the vendor corrected one score", cwd=blind)
    assert proc.returncode in (0, 4), proc.stderr
    latest = sorted((blind / "reports" / "blind-vendor").iterdir())[-1]
    history = json.loads((latest / "run.json").read_text())["systems_info"]["vendor"]["blind"]["history"]
    assert [h["sha256"] for h in history] == [first, second]
    assert "the vendor corrected one score" in (latest / "report.html").read_text()
    (blind / "vendor-scores.csv").write_text("resume_id,score\n" + "".join(f"{i},{s}\n" for i, s in scored))

    # the same scores keyed by the real ids, through an ordinary score file
    by_text = {(r["job_id"], r["cv_id"], r["variant"]): r["text"] for r in resumes}
    (plain / "real-ids.csv").write_text("job_id,cv_id,variant,score\n" + "".join(
        f"{j},{c},{v},{vendor_score(t)}\n" for (j, c, v), t in by_text.items()))
    assert run_cli("compile", "spec.yaml", cwd=plain).returncode == 0
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=plain)
    assert proc.returncode in (0, 4), proc.stderr
    plain_run = next((plain / "reports" / "blind-vendor").iterdir())
    assert (run / "metrics.csv").read_bytes() == (plain_run / "metrics.csv").read_bytes()


def test_a_returned_file_with_wrong_ids_and_gaps_is_reported_with_its_lines(tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC.format(system=BLIND))
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    assert run_cli("export", "spec.yaml", "--for-vendor", "out", "--quiet", cwd=tmp_path).returncode == 0
    rows = read_csv(tmp_path / "out" / "resumes.csv")
    lines = [f"{r['resume_id']},50" for r in rows[2:]]  # two résumés unscored
    lines[0] = "RNOTANID000,50"
    lines[1] = f"{rows[3]['resume_id']},NA"
    (tmp_path / "vendor-scores.csv").write_text("resume_id,score\n" + "\n".join(lines) + "\n")
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    err = proc.stderr
    assert "resume_id 'RNOTANID000' at line 2 are not ids of the export" in err
    assert "score is empty or missing ('NA') at line 3" in err
    assert "3 exported résumé(s) have no score" in err


def test_blind_needs_a_generator_and_export_needs_a_blind_system(tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC.format(system=BLIND.replace("blind: true", "blind: true, columns: {cv_id: x}")))
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "systems[0].columns: a blind score file has the columns resume_id and score" \
        in proc.stderr, proc.stderr
    (tmp_path / "spec.yaml").write_text(TINY_SPEC.replace("path: scores.csv}", "path: scores.csv, blind: true}"))
    (tmp_path / "scores.csv").write_text(TINY_SCORES)
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "systems[0].blind: blind: true needs a design whose résumés the tool writes" \
        in proc.stderr, proc.stderr
    (tmp_path / "spec.yaml").write_text(TINY_SPEC)
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    proc = run_cli("export", "spec.yaml", "--for-vendor", "out", cwd=tmp_path)
    assert proc.returncode == 2 and "no system has `blind: true`" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
