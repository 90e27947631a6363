"""A plug-in is its own files (issue 28 "Must show"): ``tests/plugins/keyword_overlap/``.

The plug-in adds a system kind (score = share of the job's distinct words found in the résumé) and an
audit family (the spread of each system's scores; needs paired candidates or unpaired profiles; a
verdict and a document), declared through the entry-point group ``audit_compiler.plugins`` by
``tests/plugins/keyword_overlap-0.1.dist-info``. Nothing else in the repository names it: the real
CLI finds it when ``tests/plugins`` is on ``PYTHONPATH`` (only in the subprocesses of these tests, so
the rest of the suite never sees it), and refuses its kind when it is not.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.validate import MSG_UNKNOWN_KIND
from conftest import REPO

#: The folder holding the plug-in package and its ``*.dist-info``.
PLUGINS = REPO / "tests" / "plugins"

JOBS = {
    "data-analyst": "Data analyst: SQL queries, dashboards in Power BI or Tableau, Python or R, statistics and "
                    "reporting.",
    "software-developer": "Software developer: design, code, test and review software; Java, Python, Git, APIs, "
                          "cloud and databases.",
}

TEMPLATE_SPEC = f"""\
audit: kw-audit
title: Keyword-overlap plug-in audit
seed: 5
axes:
  sex_gender:
    slot: name
    levels: [M, F]
    cues: {{M: [John Smith, Paul Martin], F: [Jane Smith, Anna Martin]}}
variants:
  reference: BASE
  table:
    BASE: {{sex_gender: M}}
    V01: {{sex_gender: F}}
jobs:
  - {{id: data-analyst, title: Data Analyst, description: {json.dumps(JOBS["data-analyst"])}}}
  - {{id: software-developer, title: Software Developer, description: {json.dumps(JOBS["software-developer"])}}}
candidates: {{generator: template, base_per_job: 12, matching_per_job: 6}}
systems:
  - {{id: kw, kind: keyword_overlap}}
analysis:
  k: {{counterfactual: 4, group: 4, merit: 6}}
  bootstrap: 200
  validity:
    positive_control: {{contrast: match}}
  keyword_overlap: {{min_spread: 0.9}}
"""

#: tests/test_compiler_plugins.py's POP_SPEC shape, with the plug-in's family block.
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
analysis:
  keyword_overlap: {min_spread: 0.05}
"""


def _env(plugin: bool) -> dict[str, str]:
    """This process's environment with ``tests/plugins`` first on ``PYTHONPATH`` (``plugin``) or off it."""
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != PLUGINS]
    return dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200",
                PYTHONPATH=os.pathsep.join([str(PLUGINS)] * plugin + paths))


def audit(*args: str, cwd: Path, plugin: bool = True) -> subprocess.CompletedProcess:
    """The real ``audit`` console entry point (as ``conftest.run_cli``), with or without the plug-in."""
    return subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", *args], cwd=cwd,
                          env=_env(plugin), capture_output=True, text=True, timeout=900)


def words(text: str) -> set[str]:
    """The scoring rule's words, written independently of the plug-in (no regular expression): every
    character of the lowercased text outside a-z and 0-9 separates words."""
    kept = "".join(ch if ("a" <= ch <= "z" or "0" <= ch <= "9") else " " for ch in text.lower())
    return set(kept.split())


def rows(path: Path) -> list[dict[str, str]]:
    """A run folder's CSV, each cell as written (no float parsing by pandas)."""
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


@pytest.mark.slow  # execute renders and signs the PDF
def test_plugin_system_and_family_on_a_template_run(tmp_path, key_dir):
    (tmp_path / "spec.yaml").write_text(TEMPLATE_SPEC, encoding="utf-8")
    proc = audit("compile", "spec.yaml", "--key-dir", str(key_dir), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = audit("execute", "spec.yaml", "--quiet", "--key-dir", str(key_dir), cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    # the plug-in's INCONCLUSIVE exits 5 beside the effects family's VALID positive control
    assert proc.returncode == 5, proc.stderr
    assert "validity protocol: VALID" in proc.stdout
    assert "keyword overlap: INCONCLUSIVE" in proc.stdout
    assert "keyword_overlap: system 'kw': score SD " in proc.stderr and "below min_spread 0.9" in proc.stderr
    (run,) = (tmp_path / "reports" / "kw-audit").iterdir()
    record = json.loads((run / "run.json").read_text())
    validity = record["validity"]
    assert validity["verdict"] == "INCONCLUSIVE"
    # one failed check, the plug-in's: the effects family's checks all passed
    assert len(validity["failed"]) == 1 and validity["failed"][0].startswith("keyword_overlap: system 'kw': score SD ")
    assert record["systems_info"]["kw"]["scored"] == 2 * 12 * 2

    # the family's document: written, listed, hashed by the signed manifest, and verified
    doc = (run / "keyword_overlap.md").read_bytes()
    assert b"INCONCLUSIVE" in doc and b"| kw | 48 |" in doc and b"keyword_overlap/1" in doc
    assert "keyword_overlap.md" in record["artifacts"]
    sha = hashlib.sha256(doc).hexdigest()
    manifest = json.loads((run / "manifest.json").read_text())
    assert {"path": "keyword_overlap.md", "sha256": sha, "bytes": len(doc)} in manifest["artifacts"]
    envelope = json.loads((run / "manifest.dsse.json").read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}["keyword_overlap.md"] == sha
    proc = audit("verify", str(run), "--key-dir", str(key_dir), cwd=tmp_path, plugin=False)  # needs no plug-in
    assert proc.returncode == 0, proc.stdout + proc.stderr

    # two résumés scored by hand: a matching and a non-matching base candidate of one job
    resumes = [r for r in rows(run / "resumes.csv") if r["job_id"] == "data-analyst" and r["variant"] == "V01"]
    picked = [next(r for r in resumes if r["is_true_match"] == m) for m in ("1", "0")]
    scores = {(r["job_id"], r["cv_id"], r["variant"]): r["score"] for r in rows(run / "paired.csv")
              if r["system"] == "kw"}
    job = words(JOBS["data-analyst"])
    got = []
    for r in picked:
        expected = len(job & words(r["text"])) / len(job)
        assert 0 < expected < 1
        assert float(scores[(r["job_id"], r["cv_id"], r["variant"])]) == expected, r["cv_id"]
        got.append(expected)
    assert got[0] > got[1]  # the matching résumé shares more of the job's words


def test_plugin_family_validates_on_a_population_spec(tmp_path):
    """The family needs paired candidates or unpaired profiles: a population design meets the second."""
    (tmp_path / "spec.yaml").write_text(POP_SPEC, encoding="utf-8")
    (tmp_path / "scores.csv").write_text("job_id,cv_id,score\n", encoding="utf-8")
    proc = audit("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "valid: spec.yaml" in proc.stdout


def test_without_the_plugin_its_kind_is_unknown(tmp_path):
    (tmp_path / "spec.yaml").write_text(TEMPLATE_SPEC, encoding="utf-8")
    proc = audit("validate", "spec.yaml", cwd=tmp_path, plugin=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    builtin = "'embedding', 'precomputed', 'llm_score', 'llm_compare'"
    assert MSG_UNKNOWN_KIND.format(kind="keyword_overlap", kinds=builtin) in proc.stderr
