"""``audit init`` (issue 26 §2): one commented starter per design, and its refusals.

Each starter's ``audit.yaml`` validates (``audit validate``, on the full install) and against the
spec's JSON Schema, starts with the yaml-language-server line and comments every block; the
score-file starter compiles, executes and verifies end to end with keys from ``audit keygen``, and its
made-up fair system gets no FAIL. Refusals exit 2 with a whole, golden message and write nothing.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import os
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
from ruamel.yaml import YAML

from compiler.designs import DESIGNS
from compiler.schema import render, spec_schema
from conftest import REPO, run_cli
from runtime.init import (DESIGN_WORDS, MSG_EXISTS, MSG_NOT_A_FOLDER, MSG_SYSTEM_KIND, MSG_UNKNOWN_DESIGN,
                          MSG_UNWRITABLE, SCHEMA_FILE, SCHEMA_LINE, SPEC_FILE, init_audit, starter_dir,
                          starter_files)

DESIGN_LIST = "template, llm, population, score_file, applicants"
STARTERS = REPO / "runtime" / "init"


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# ------------------------------------------------------------------------------- every design

def test_every_design_has_a_starter_and_words_in_the_help():
    """A design added to DESIGNS without a starter (or without its line in `audit init --help`) fails here."""
    assert tuple(DESIGN_WORDS) == tuple(DESIGNS) == ("template", "llm", "population", "score_file", "applicants")
    for design in DESIGNS:
        assert starter_dir(design).joinpath(SPEC_FILE).is_file(), f"no runtime/init/{design}/audit.yaml"


def test_the_package_data_patterns_ship_every_starter_file():
    """The wheel carries runtime/init/<design>/ (package data): each file matches a pattern of pyproject."""
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["*"]
    assert "*.md" in patterns
    files = [p for p in STARTERS.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".py"]
    assert {p.relative_to(STARTERS).as_posix() for p in files} >= {
        "score_file/audit.yaml", "score_file/scores.csv", "template/audit.yaml", "template/jobs/data-analyst.md",
        "template/jobs/accountant.md", "population/audit.yaml", "population/jobs/accountant.md", "llm/audit.yaml",
        "applicants/audit.yaml", "applicants/applicants.csv"}
    for p in files:
        assert any(fnmatch.fnmatch(p.name, pat) for pat in patterns), f"{p} is not package data"


@pytest.mark.parametrize("design", list(DESIGNS))
def test_init_writes_a_commented_starter_that_validates(tmp_path, design):
    proc = run_cli("init", "--design", design, "work", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    work = tmp_path / "work"
    expected = [SPEC_FILE, *[rel for rel in starter_files(design) if rel != SPEC_FILE], SCHEMA_FILE]
    assert [line.removeprefix("wrote ") for line in proc.stdout.splitlines() if line.startswith("wrote ")] == \
        [str(Path("work") / rel) for rel in expected]
    assert _listing(work) == sorted({*expected, *(str(Path(rel).parent) for rel in expected if "/" in rel)})
    for rel in expected[:-1]:  # copied byte for byte
        assert (work / rel).read_bytes() == starter_dir(design).joinpath(*rel.split("/")).read_bytes()
    assert (work / SCHEMA_FILE).read_text() == render(spec_schema())

    text = (work / SPEC_FILE).read_text()
    assert text.splitlines()[0] == SCHEMA_LINE == "# yaml-language-server: $schema=audit.schema.json"
    # every top-level block is introduced by a comment saying what it means and what is allowed
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line and not line.startswith((" ", "#", "-")):
            assert lines[i - 1].startswith("#"), f"{design}: block {line.split(':')[0]!r} has no comment above it"
    doc = YAML(typ="safe").load(text)
    jsonschema.Draft202012Validator(spec_schema()).validate(json.loads(json.dumps(doc, default=str)))

    proc = run_cli("validate", SPEC_FILE, cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1].startswith(f"valid: {SPEC_FILE} (")
    assert "Traceback" not in proc.stderr


def test_the_starters_job_postings_are_the_shipped_ones():
    """The postings are copies of specs/jobs/ (which tests/test_generate_content.py keeps equal to the generator's)."""
    for posting in STARTERS.glob("*/jobs/*.md"):
        assert posting.read_bytes() == (REPO / "specs" / "jobs" / posting.name).read_bytes(), posting


# -------------------------------------------------------------------------- the score-file starter

def test_the_starter_scores_are_the_scripts_and_have_the_promised_shape():
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import make_init_scores
    finally:
        sys.path.remove(str(REPO / "scripts"))
    text = (STARTERS / "score_file" / "scores.csv").read_text()
    assert text == "\n".join(make_init_scores.rows()) + "\n"  # regenerated by the script, byte for byte
    rows = list(csv.DictReader(io.StringIO(text)))
    spec = YAML(typ="safe").load((STARTERS / "score_file" / SPEC_FILE).read_text())
    jobs, variants = [j["id"] for j in spec["jobs"]], list(spec["variants"]["table"])
    assert sorted({r["job_id"] for r in rows}) == sorted(jobs) and len(jobs) == 2
    assert len(rows) == 2 * 20 * len(variants) == 160
    for job in jobs:
        cands = {r["cv_id"] for r in rows if r["job_id"] == job}
        assert len(cands) == 20 > max(spec["analysis"]["k"].values())
        for cv in cands:
            assert sorted(r["variant"] for r in rows if (r["job_id"], r["cv_id"]) == (job, cv)) == sorted(variants)
    assert all(0 <= int(r["score"]) <= 100 for r in rows) and {r["is_true_match"] for r in rows} == {"0", "1"}
    matches = [int(r["score"]) for r in rows if r["is_true_match"] == "1"]
    others = [int(r["score"]) for r in rows if r["is_true_match"] == "0"]
    assert sum(matches) / len(matches) > sum(others) / len(others) + 15  # matches score higher on average
    assert "source" in spec and "decision" in spec["analysis"]


def test_the_score_file_starter_compiles_executes_and_verifies(tmp_path):
    """The default design into the current folder, signed with keys from `audit keygen`: a fair system, no FAIL."""
    proc = run_cli("init", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / SPEC_FILE).is_file() and (tmp_path / "scores.csv").is_file()
    assert run_cli("keygen", "--key-dir", "keys", "--signer", "Init Tester", cwd=tmp_path).returncode == 0
    proc = run_cli("compile", SPEC_FILE, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "decision rule: selected = score >= 70" in proc.stdout
    proc = run_cli("execute", SPEC_FILE, "--key-dir", "keys", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = next((tmp_path / "reports" / "vendor-export-audit").iterdir())
    metrics = list(csv.DictReader(io.StringIO((run / "metrics.csv").read_text())))
    assert len(metrics) == 10 * 4  # ten metrics (methods 8) x four variants (the reference included)
    statuses = {r["status"] for r in metrics} | {r["status_operational"] for r in metrics}
    assert "FAIL" not in statuses, [(r["metric"], r["variant"], r["value"]) for r in metrics if "FAIL" in
                                    (r["status"], r["status_operational"])]
    proc = run_cli("verify", str(run.relative_to(tmp_path)), "--key-dir", "keys", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].startswith(f"verified: {run.relative_to(tmp_path)} against pinned key ")


# ----------------------------------------------------------------------------------- refusals

def _refused(proc, message: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr == f"error: {message}\n"  # one line, no traceback
    assert proc.stdout == ""


@pytest.fixture
def audit(tmp_path, monkeypatch, capsys):
    """``audit(*args)``: the CLI's entry point in this process, in ``tmp_path``; returns what
    :func:`run_cli` does (returncode, stdout, stderr), without a subprocess's start-up."""
    from types import SimpleNamespace

    from runtime.cli import main

    monkeypatch.chdir(tmp_path)

    def _run(*args: str):
        capsys.readouterr()
        with pytest.raises(SystemExit) as done:
            main(list(args))
        out = capsys.readouterr()
        return SimpleNamespace(returncode=done.value.code, stdout=out.out, stderr=out.err)

    return _run


def test_init_over_an_existing_file_names_it_and_writes_nothing(tmp_path, audit):
    work = tmp_path / "work"
    work.mkdir()
    (work / "scores.csv").write_text("the vendor's real export\n")
    proc = audit("init", "work")
    _refused(proc, MSG_EXISTS.format(dir="work", files="work/scores.csv", verb="exists", them="it"))
    assert proc.stderr == ("error: work: work/scores.csv already exists; audit init replaces no file and wrote "
                           "nothing: init into another folder, or move it away\n")
    assert _listing(work) == ["scores.csv"] and (work / "scores.csv").read_text() == "the vendor's real export\n"


def test_a_file_where_a_starter_needs_a_folder_is_named(tmp_path, audit):
    (tmp_path / "jobs").write_text("not a folder\n")
    proc = audit("init", "--design", "population", ".")
    _refused(proc, ".: jobs already exists; audit init replaces no file and wrote nothing: init into another "
                   "folder, or move it away")
    assert _listing(tmp_path) == ["jobs"]


def test_init_twice_names_every_file_it_would_replace(tmp_path, audit):
    assert audit("init", "--design", "template").returncode == 0
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    proc = audit("init", "--design", "template")
    files = "./audit.yaml, ./jobs/accountant.md, ./jobs/data-analyst.md, ./audit.schema.json"
    _refused(proc, f".: {files.replace('./', '')} already exist; audit init replaces no file and wrote nothing: "
                   "init into another folder, or move them away")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(("kind", "design"), [("precomputed", "score_file"), ("embedding", "template"),
                                              ("llm_score", "llm"), ("llm_compare", "llm"),
                                              ("applicant_file", "applicants")])
def test_a_system_kind_is_not_a_design(tmp_path, kind, design, audit):
    # the real console script once (a subprocess), the others in this process
    proc = run_cli("init", "--design", kind, "work", cwd=tmp_path) if kind == "precomputed" \
        else audit("init", "--design", kind, "work")
    _refused(proc, MSG_SYSTEM_KIND.format(name=kind, design=design, designs=DESIGN_LIST))
    if kind == "precomputed":
        assert proc.stderr == ("error: --design precomputed: a system kind, not a design; did you mean score_file? "
                               "The designs are: template, llm, population, score_file, applicants\n")
    assert not (tmp_path / "work").exists()


def test_an_unknown_design_lists_the_designs(tmp_path, audit):
    proc = audit("init", "--design", "factorial", "work")
    _refused(proc, MSG_UNKNOWN_DESIGN.format(name="factorial", designs=DESIGN_LIST))
    assert proc.stderr == ("error: --design factorial: unknown design; the designs are: template, llm, population, "
                           "score_file, applicants\n")
    assert not (tmp_path / "work").exists()


def test_a_folder_that_cannot_be_made_or_is_a_file_is_refused(tmp_path, audit):
    (tmp_path / "notes.txt").write_text("x")
    proc = audit("init", "notes.txt/audit")
    _refused(proc, MSG_UNWRITABLE.format(dir="notes.txt/audit", reason="Not a directory"))
    proc = audit("init", "notes.txt")
    _refused(proc, MSG_NOT_A_FOLDER.format(dir="notes.txt"))
    assert _listing(tmp_path) == ["notes.txt"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_folder_is_refused(tmp_path):
    work = tmp_path / "ro"
    work.mkdir()
    work.chmod(0o555)
    try:
        proc = audit("init", "ro")
        _refused(proc, MSG_UNWRITABLE.format(dir="ro", reason="Permission denied"))
        assert _listing(work) == []
    finally:
        work.chmod(0o755)


def test_an_unwritable_folder_is_refused_and_a_folder_made_for_it_removed(tmp_path, monkeypatch):
    """As root every folder is writable: the probe's PermissionError is simulated (the read-only test
    above runs it for real as another user)."""
    import tempfile

    from compiler.errors import AuditError

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryFile", denied)
    with pytest.raises(AuditError) as err:
        init_audit(tmp_path / "new" / "audit")
    assert str(err.value) == MSG_UNWRITABLE.format(dir=tmp_path / "new" / "audit", reason="Permission denied")
    assert _listing(tmp_path) == []  # the folders it made are gone
