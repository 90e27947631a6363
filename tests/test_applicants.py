"""Issue 34 (LL144 part B): the ``applicants`` design and the ``applicant_file`` system kind.

Real CLI on applicant files written here; the LL144 tables equal a pandas computation to 1e-12
(:func:`test_ll144.expected`, written from 6 RCNY §5-300); no applicant id in any file the tool writes
(run folder, ``.audit-store/`` with its Parquet bytes, lock, plan); every bad line named by one
``audit validate``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli
from test_ll144 import assert_tables_equal, expected

GOLDEN = Path(__file__).parent / "golden" / "errors"

SEX_LABELS = {"M": "male", "F": "female", "": "unknown"}
RACE_LABELS = {"White": "white", "Black": "black_or_african_american", "Hispanic": "hispanic_or_latino",
               "Asian": "asian", "NHPI": "native_hawaiian_or_pacific_islander", "Declined": "unknown"}

SPEC = """\
audit: acme-hist
title: Acme Match, historical applicants
seed: 11
systems:
  - id: acme-match
    kind: applicant_file
    path: applicants.csv
    outcome: {outcome}
{range}    columns: {{id: applicant_id, sex: gender, race_ethnicity: ethnicity, {outcome}: {col}{group}, date: applied_on}}
    labels:
      sex: {{M: male, F: female, "": unknown}}
      race_ethnicity: {{White: white, Black: black_or_african_american, Hispanic: hispanic_or_latino, Asian: asian, NHPI: native_hawaiian_or_pacific_islander, Declined: unknown}}
    retention_days: 180
analysis:
  ll144:
    small_category_rule: {{justification: "categories under 2% give unstable ratios"}}
    bootstrap: 200
disclosure:
  employer: Acme Corp
  aedt: {{name: Acme Match, version: "4.2", distributed: 2024-03-01}}
  auditor: {{name: Example Audits LLC, independence: "No financial interest in Acme or its vendor."}}
  data: {{source: "ATS export, requisitions of 2025", from: 2025-01-01, to: 2025-12-31}}
"""


ANNEX = """\
  provider: Acme Talent Ltd
  intended_purpose: Ranks applicants for accounting roles before a recruiter's review.
  responsible: [{name: Ann Lee, role: Lead auditor, organisation: Example Audits LLC}, {name: Bo Chan, role: Reviewer}]
"""


def spec_text(outcome: str = "selected", grouped: bool = True, annex: bool = False) -> str:
    return SPEC.format(outcome=outcome, col="advanced" if outcome == "selected" else "match_score",
                       range="" if outcome == "selected" else "    score_range: [0, 100]\n",
                       group=", group: requisition" if grouped else "") + (ANNEX if annex else "")


def canary(i: int) -> str:
    """An applicant id no file the tool writes may hold (any of its bytes would be a leak)."""
    return f"CANARY{i:05d}ZQX"


def applicants(outcome: str, seed: int = 3) -> pd.DataFrame:
    """Applicants with planted rates, unknowns, a category of exactly 2% (kept) and one under 2% (excluded)
    in group r1 (100 applicants), and median ties under ``outcome="score"``."""
    gen = np.random.default_rng(seed)
    rows = []
    for group, n in (("r1", 100), ("r2", 150)):
        races = (["White"] * 40 + ["Black"] * 30 + ["Hispanic"] * 20 + ["Asian"] * 2 + ["NHPI"] * 1
                 + ["Declined"] * (n - 93))
        sexes = gen.choice(["M", "F", ""], size=n, p=[0.47, 0.47, 0.06])
        for j in range(n):
            race = races[j]
            p = {"White": 0.5, "Black": 0.35, "Hispanic": 0.4, "Asian": 0.6, "NHPI": 0.5, "Declined": 0.3}[race]
            p *= 0.8 if sexes[j] == "F" else 1.0
            sel = int(gen.random() < p)
            score = int(gen.integers(0, 11)) * 10 if race != "White" else int(gen.integers(3, 11)) * 10
            rows.append({"applicant_id": canary(len(rows)), "gender": sexes[j], "ethnicity": race,
                         "advanced": ["yes", "no"][1 - sel] if j % 3 == 0 else str(sel), "match_score": score,
                         "requisition": group, "applied_on": f"2025-{1 + j % 12:02d}-{1 + j % 28:02d}"})
    frame = pd.DataFrame(rows)
    return frame.drop(columns=["match_score"] if outcome == "selected" else ["advanced"])


def individuals(frame: pd.DataFrame, outcome: str, grouped: bool = True) -> pd.DataFrame:
    """The individuals as 6 RCNY §5-300 reads them, written again with pandas."""
    sel = frame["advanced"].map(lambda c: {"1": 1.0, "0": 0.0, "yes": 1.0, "no": 0.0}[c]) \
        if outcome == "selected" else np.nan
    return pd.DataFrame({"system": "acme-match", "condition": "default",
                         "group": frame["requisition"] if grouped else "ALL",
                         "sex": frame["gender"].fillna("").map(SEX_LABELS),
                         "race_ethnicity": frame["ethnicity"].map(RACE_LABELS),
                         "score": frame["match_score"].astype(float) if outcome == "score" else sel,
                         "selected": sel})


def _run(folder: Path, spec: str, frame: pd.DataFrame, *, args: tuple = (), to_report: bool = True) -> Path:
    """compile + execute through the real CLI; ``to_report`` False stops the run at its report stage (the test
    hook of runtime.testhooks: the tables and the summary are written by then; no PDF is rendered)."""
    folder.mkdir(parents=True)
    (folder / "spec.yaml").write_text(spec)
    frame.to_csv(folder / "applicants.csv", index=False)
    proc = run_cli("compile", "spec.yaml", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200")
    if not to_report:
        env["AUDIT_TEST_KILL_AT"] = "report"
    signing = () if "--key-dir" in args else ("--unsigned",)  # --unsigned with keys is a usage error (exit 2)
    proc = subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", "execute", *signing, "spec.yaml",
                           "--quiet", "--out", "out", *args], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == (0 if to_report else -9), proc.stderr
    return next((folder / "out" / "acme-hist").iterdir())


def html_text(html: str) -> str:
    """The text of an HTML fragment as a reader sees it (tags dropped, entities decoded, spaces collapsed)."""
    import html as h
    import re

    return re.sub(r"\s+", " ", h.unescape(re.sub(r"<[^>]+>", " ", html)))


def _read(run: Path) -> pd.DataFrame:
    return pd.read_csv(run / "ll144.csv", keep_default_na=False, na_values=[""])


@pytest.fixture(scope="module")
def key_dir(tmp_path_factory):
    from runtime.provenance.keygen import keygen

    path = tmp_path_factory.mktemp("keys") / "keys"
    keygen(path, signer="Ann Lee", role="Lead auditor", organisation="Example Audits LLC")
    return path


@pytest.fixture(scope="module")
def selected_run(tmp_path_factory, key_dir):
    """A signed run (the key of Ann Lee, Lead auditor) of 250 applicants in two requisitions."""
    folder = tmp_path_factory.mktemp("applicants") / "selected"
    frame = applicants("selected")
    return _run(folder, spec_text("selected", annex=True), frame, args=("--key-dir", str(key_dir))), frame


def test_selection_tables_match_pandas(selected_run):
    """Selection rates by group (r1, r2) with unknowns counted in the 2% rule's N, which is the audit's (250
    applicants, both requisitions; 6 RCNY §5-301(d)): Asian, exactly 2% of r1 but 4 of 250 (1.6%) of the audit,
    is excluded from both groups, as is NHPI (2 of 250); Fisher's test on independent applicants."""
    run, frame = selected_run
    got = _read(run)
    want = expected(individuals(frame, "selected"), basis="selection", rule=True)
    assert_tables_equal(got, want, scoring=False)
    assert set(got["group"]) == {"r1", "r2"} and set(got["basis"]) == {"selection"}
    r1 = got[(got["group"] == "r1") & (got["table"] == "race_ethnicity")].set_index("category")
    assert r1.loc["asian", "n"] == 2 and r1.loc["asian", "excluded"]  # 2% of r1, 1.6% of the audit
    assert "1.6% of the audit's individuals" in r1.loc["asian", "reason"]
    assert r1.loc["native_hawaiian_or_pacific_islander", "excluded"]      # 1 of 100: under 2%
    assert r1.loc["unknown", "n"] == 7
    # Fisher's exact test against the reference, recomputed
    from scipy.stats import fisher_exact

    ref = r1["impact_ratio"].idxmax()
    ind = individuals(frame, "selected")
    ind = ind[ind["group"] == "r1"]
    a, b = ind[ind["race_ethnicity"] == "black_or_african_american"], ind[ind["race_ethnicity"] == ref]
    p = fisher_exact([[a["selected"].sum(), len(a) - a["selected"].sum()],
                      [b["selected"].sum(), len(b) - b["selected"].sum()]]).pvalue
    assert abs(r1.loc["black_or_african_american", "extra_p_value"] - p) < 1e-12


def test_no_personal_row_is_kept(selected_run):
    """No applicant id in any file the tool wrote (run folder, task store and its Parquet bytes, lock, plan);
    no scores.csv; run.json keeps the file's sha256 and row count."""
    import hashlib
    import json

    run, frame = selected_run
    folder = run.parent.parent.parent
    written = [p for p in folder.rglob("*") if p.is_file() and p.name not in ("applicants.csv", "spec.yaml")]
    assert any(p.parent.name == ".audit-store" or ".audit-store" in p.parts for p in written)
    assert (folder / "spec.lock.json").exists() and (folder / "spec.plan.json").exists()
    assert (run / "manifest.dsse.json").exists() and (run / "report.pdf").exists()
    for p in written:
        data = p.read_bytes()
        assert b"CANARY" not in data, p
        assert b"ZQX" not in data, p
    assert not (run / "scores.csv").exists() and not (run / "paired.csv").exists()
    store = [p for p in (folder / ".audit-store").rglob("*") if p.is_file()]
    assert not [p for p in store if p.suffix == ".parquet"], store  # the ledger only
    rec = json.loads((run / "run.json").read_text())
    sha = hashlib.sha256((folder / "applicants.csv").read_bytes()).hexdigest()
    assert rec["applicants"]["acme-match"]["file_sha256"] == sha
    assert rec["applicants"]["acme-match"]["rows"] == len(frame) == 250
    assert rec["applicants"]["acme-match"]["groups"] == {"r1": 100, "r2": 150}
    html = (run / "report.html").read_text()
    assert "the auditor keeps the applicant file for 180 days" in html.replace("The auditor", "the auditor")
    assert "not applicants" not in html  # historical data, not a designed sample
    section = html_text(html[html.index('<section id="ll144"'):html.index("</section>", html.index('id="ll144"'))])
    assert "the tool's recorded outcome for each applicant" in section and "None" not in section
    assert "Why test data" not in section and "group r1" in section and "job r1" not in section


def test_scoring_tables_match_pandas_with_median_ties(tmp_path):
    """outcome: score, no group column (one group ALL): scoring rates on the median of every applicant
    (unknowns included), scores at the median counted for no category."""
    frame = applicants("score", seed=5)
    spec = spec_text("score", grouped=False)
    run = _run(tmp_path / "score", spec, frame.drop(columns=["requisition"]), to_report=False)
    got = _read(run)
    ind = individuals(frame, "score", grouped=False)
    want = expected(ind, basis="scoring", rule=True)
    assert_tables_equal(got, want, scoring=True)
    assert set(got["group"]) == {"ALL"}
    assert (ind["score"] == ind["score"].median()).sum() > 10  # ties at the median are exercised
    assert got["n_at_median"].max() > 0
    # same spec + seed -> same bytes: a second run of the same lock (stopped after its tables and documents)
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200", AUDIT_TEST_KILL_AT="report")
    folder = run.parent.parent.parent
    subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", "execute", "--unsigned", "spec.yaml", "--quiet",
                    "--out", "again"], cwd=folder, env=env, capture_output=True, text=True, timeout=900)
    again = next((folder / "again" / "acme-hist").iterdir())
    assert (again / "ll144.csv").read_bytes() == (run / "ll144.csv").read_bytes()
    one, two = ((r / "ll144-summary.html").read_text().replace(r.name, "RUN") for r in (run, again))
    assert one == two


BAD = """\
applicant_id,gender,ethnicity,advanced,requisition,applied_on
a1,M,White,1,r1,2025-01-02
a2,Female,Black,0,r1,2025-01-03
,F,White,1,r1,2025-02-02
a1,M,Whte,0,r1,2025-03-02
a5,F,Black,maybe,r2,2025-03-02
a6,M,White,0,r2,03/04/2025
a7,M,White,1,r2,2026-04-02
"""


def test_bad_file_every_line_named_at_once(tmp_path):
    """One ``audit validate``: every problem of the file, each naming its CSV lines (header = 1); exit 2, no
    traceback, nothing locked."""
    (tmp_path / "spec.yaml").write_text(spec_text("selected"))
    (tmp_path / "applicants.csv").write_text(BAD)
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    golden = GOLDEN / "applicants_bad_file.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(proc.stderr)
    assert proc.stderr == golden.read_text()
    for text in ("empty applicant id at line 4", "applicant id repeated at line 5", "sex label(s) 'Female' at line 3",
                 "'Whte' (did you mean 'White'?) at line 5", "selected is not 1/0, true/false or yes/no at line 6",
                 "date is not an ISO date YYYY-MM-DD at line 7", "outside disclosure.data [2025-01-01, 2025-12-31] at "
                 "line 8"):
        assert text in proc.stderr, text
    assert "a1" not in proc.stderr  # no applicant id in a message
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 2
    assert not list(tmp_path.glob("*.lock.json"))


def _spec_case(replace: tuple[tuple[str, str], ...] = (), append: str = "", outcome: str = "selected") -> str:
    text = spec_text(outcome)
    for a, b in replace:
        assert a in text, a
        text = text.replace(a, b)
    return text + append


ERROR_CASES = {
    # a mix of kinds; jobs, axes and variants with applicants; no analysis.ll144; why_test_data (test data only)
    "applicants_mix_and_keys": _spec_case(
        (("retention_days: 180\n", "retention_days: 180\n  - {id: vendor, kind: precomputed, path: applicants.csv}\n"),
         ("    bootstrap: 200\n", "    bootstrap: 200\n    why_test_data: none\n")),
        "jobs:\n  - {id: j1}\naxes: {}\nvariants: {reference: BASE}\n"),
    "applicants_no_ll144": _spec_case((("  ll144:\n    small_category_rule: {justification: \"categories under 2% "
                                        "give unstable ratios\"}\n    bootstrap: 200\n", "  alpha: 0.05\n"),)),
    # a label mapped to an unknown id; retention outside 1-3650 (the models' checks: before the semantic ones)
    "applicants_labels_range_retention": _spec_case(
        (("Declined: unknown", "Declined: other"), ("retention_days: 180", "retention_days: 4000")), outcome="score")
    .replace("    score_range: [0, 100]\n", ""),
    "applicants_score_without_range": _spec_case(outcome="score").replace("    score_range: [0, 100]\n", ""),
    "applicants_no_disclosure": spec_text("selected")[:spec_text("selected").index("disclosure:")],
    # missing disclosure fields; responsible without provider
    "applicants_disclosure": _spec_case(
        (("  employer: Acme Corp\n", ""), ("  data: {source: \"ATS export, requisitions of 2025\", from: 2025-01-01, "
                                           "to: 2025-12-31}\n", "  data: {source: ATS export}\n")),
        "  responsible: [{name: Ann Lee, role: Lead auditor}]\n"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_spec_errors_golden(case, tmp_path):
    """Exit 2, every problem at once, located, no traceback, nothing locked (golden messages)."""
    (tmp_path / "spec.yaml").write_text(ERROR_CASES[case])
    applicants("selected").head(5).to_csv(tmp_path / "applicants.csv", index=False)
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    golden = GOLDEN / f"{case}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(proc.stderr)
    assert proc.stderr == golden.read_text()
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 2
    assert not list(tmp_path.glob("*.lock.json"))


def test_file_changed_after_the_lock_exits_3_with_both_digests(tmp_path):
    import hashlib

    (tmp_path / "spec.yaml").write_text(spec_text("selected"))
    frame = applicants("selected").head(60)
    frame.to_csv(tmp_path / "applicants.csv", index=False)
    old = hashlib.sha256((tmp_path / "applicants.csv").read_bytes()).hexdigest()
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    frame.iloc[:59].to_csv(tmp_path / "applicants.csv", index=False)
    new = hashlib.sha256((tmp_path / "applicants.csv").read_bytes()).hexdigest()
    proc = run_cli("execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert old in proc.stderr and new in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_summary_names_every_field_and_is_sealed(selected_run, key_dir, tmp_path):
    """ll144-summary.html: one self-contained page (no script, no URL) with the audit date (run start), the
    disclosure, the data's type and range, the applicants, the unknowns, the three tables of every group, the
    exclusion's justification and the footer; in the manifest; a changed byte fails verify (exit 6) naming it."""
    import json
    import re
    import shutil

    run, frame = selected_run
    html = (run / "ll144-summary.html").read_text()
    rec = json.loads((run / "run.json").read_text())
    assert "ll144-summary.html" in rec["artifacts"]
    manifest = json.loads((run / "manifest.json").read_text())
    assert "ll144-summary.html" in json.dumps(manifest)
    assert "<script" not in html.lower() and not re.search(r"(https?:)?//[a-z]", html.lower().replace("<!doctype", ""))
    text = html_text(html)
    for want in (f"Date of the audit {rec['generated_at'][:10]}", "Employer Acme Corp", "Acme Match, version 4.2",
                 "Distribution date 2024-03-01", "Independent auditor Example Audits LLC",
                 "No financial interest in Acme or its vendor.", "ATS export, requisitions of 2025",
                 "historical data of the tool's use", "Data range 2025-01-01 to 2025-12-31", "Applicants 250",
                 "Group r1: 100 individuals", "Group r2: 150 individuals",
                 "categories under 2% give unstable ratios", f"run {rec['run_id']}",
                 f"sha256:{rec['spec_digest']['digest']}", "audit verify RUN_DIR"):
        assert want in text, want
    got = _read(run)
    for group in ("r1", "r2"):
        unk = got[(got["group"] == group) & (got["category"] == "unknown")].set_index("table")["n"]
        assert (f"Unknown category: Sex {unk['sex']}; Race/ethnicity {unk['race_ethnicity']}; "
                f"Intersectional (sex × race/ethnicity) {unk['intersectional']}") in text
    assert text.count("Intersectional (sex × race/ethnicity)") >= 4  # a table per group, plus the unknowns
    # the Black row of r1 as ll144.csv has it, rate and ratio to 4 significant digits
    row = got[(got["group"] == "r1") & (got["table"] == "race_ethnicity")
              & (got["category"] == "black_or_african_american")].iloc[0]
    assert f"Black or African American {row['n']} {row['rate']:#.4g} {row['impact_ratio']:#.4g}" in text
    assert run_cli("verify", str(run), "--key-dir", str(key_dir), cwd=tmp_path).returncode == 0
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    data = bytearray((copy / "ll144-summary.html").read_bytes())
    data[data.index(b"Acme Corp")] = ord("X")
    (copy / "ll144-summary.html").write_bytes(bytes(data))
    proc = run_cli("verify", str(copy), "--key-dir", str(key_dir), cwd=tmp_path)
    assert proc.returncode == 6 and "ll144-summary.html" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_annex_iv_record_names_who_signed(selected_run):
    """#annex-iv (disclosure.provider written): provider, system, purpose, procedure, test data, results, date,
    signature; Ann Lee (Lead auditor) signed at sealing, Bo Chan (Reviewer) flagged with the verify command."""
    import json
    import re

    run, _ = selected_run
    html = (run / "report.html").read_text()
    part = html[html.index('<section id="annex-iv"'):]
    part = part[:part.index("</section>")]
    text = html_text(part)
    rec = json.loads((run / "run.json").read_text())
    for want in ("Provider Acme Talent Ltd", "System Acme Match, version 4.2",
                 "Ranks applicants for accounting roles before a recruiter's review.", "audit families ll144",
                 f"methods version {rec['methods_version']}", "historical data of the system's use",
                 "size: 250 historical applicants", "range: 2025-01-01 to 2025-12-31", f"Date {rec['generated_at'][:10]}",
                 "signed at sealing by Ann Lee (Lead auditor, Example Audits LLC)", "manifest.json",
                 "Ann Lee Lead auditor Example Audits LLC signed at sealing",
                 'Bo Chan Reviewer not signed at sealing: a countersignature in this role is checked with '
                 'audit verify RUN_DIR --require-role "Reviewer"'):
        assert want in text, want
    assert html.index('id="annex-iv"') < html.index('id="provenance"')
    assert 'href="#ll144"' in part


def test_summary_and_report_read_in_headless_chromium(selected_run, tmp_path):
    """As a browser shows them (headless Chromium, issue 34 §4): the summary of two groups prints on one A4
    page with every table, and neither it nor the report requests anything beyond its own file (Chromium's
    net log; a control page with an external image shows the check can fail); the report printed by
    Chromium keeps every section heading of its HTML."""
    import html as h
    import re

    from chromium import pdf_pages, print_pdf

    run, _ = selected_run
    summary = tmp_path / "summary.pdf"
    assert print_pdf(run / "ll144-summary.html", summary) == []
    assert pdf_pages(summary) == (1, "594.96 x 841.92 pts (A4)")
    text = " ".join(subprocess.run(["pdftotext", str(summary), "-"], capture_output=True, text=True,
                                   check=True).stdout.split())
    for want in ("Group r1:", "Group r2:", "Sex", "Race/ethnicity", "Intersectional (sex × race/ethnicity)",
                 "Female / Black or African American", "audit verify RUN_DIR"):
        assert want in text, want
    assert text.count("Impact ratio") >= 6  # three tables per group
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">x</body></html>')
    assert print_pdf(control, tmp_path / "control.pdf") == ["http://127.0.0.1:9/x.png"]
    report = tmp_path / "report.pdf"
    assert print_pdf(run / "report.html", report) == []
    printed = " ".join(subprocess.run(["pdftotext", str(report), "-"], capture_output=True, text=True,
                                      check=True).stdout.split())
    headings = [" ".join(h.unescape(re.sub(r"<[^>]+>", " ", x)).split())
                for x in re.findall(r"<h2[^>]*>(.*?)</h2>", (run / "report.html").read_text(), flags=re.S)]
    # case-blind: the contents' heading is upper-cased by CSS (text-transform), and pdftotext reads it so
    missing = [x for x in headings if x.casefold() not in printed.casefold()]
    assert len(headings) >= 5 and not missing, missing


SPECS = Path(__file__).resolve().parent.parent / "specs"
BLS = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "bls" / "cps_aat11_target_occupations_2021_2022.csv"


def test_example_file_is_seeded_and_follows_bls(tmp_path):
    """specs/ll144/applicants.csv is what scripts/make_applicants.py writes (same bytes), 5,000 rows; the shares
    among known categories are within 1 point of BLS CPS 2022 Table 11, accountants and auditors, converted to
    EEO-1 categories (Hispanic 9.7%; White, Black, Asian x 0.903; the rest x 0.903 equally to the other three)."""
    script = SPECS.parent / "scripts" / "make_applicants.py"
    out = tmp_path / "a.csv"
    subprocess.run([sys.executable, str(script), str(out)], check=True)
    assert out.read_bytes() == (SPECS / "ll144" / "applicants.csv").read_bytes()
    frame = pd.read_csv(out, keep_default_na=False)
    assert len(frame) == 5000 and frame["applicant_id"].is_unique
    if BLS.exists():
        bls = pd.read_csv(BLS)
        row = bls[(bls["year"] == 2022) & (bls["occupation"] == "Accountants and auditors")].iloc[0]
        women, white, black, asian, hisp = (row[c] for c in ("pct_women", "pct_white", "pct_black_or_african_american",
                                                             "pct_asian", "pct_hispanic_or_latino"))
    else:  # the values of that row, as the script's docstring cites them
        women, white, black, asian, hisp = 58.8, 76.1, 9.7, 11.7, 9.7
    k = 1 - hisp / 100
    rest = (100 - white - black - asian) * k / 3
    want = {"Hispanic": hisp, "White": white * k, "Black": black * k, "Asian": asian * k, "NHPI": rest, "AIAN": rest,
            "Two+": rest}
    known = frame[frame["ethnicity"] != "Declined"]["ethnicity"].value_counts(normalize=True) * 100
    for label, share in want.items():
        assert abs(known[label] - share) <= 1.0, (label, known[label], share)
    sexes = frame[frame["gender"] != ""]["gender"].value_counts(normalize=True) * 100
    assert abs(sexes["F"] - women) <= 1.0
    assert (frame["gender"] == "").mean() == pytest.approx(0.04) and (frame["ethnicity"] == "Declined").mean() == \
        pytest.approx(0.06)


def test_example_spec_runs_and_matches_pandas(tmp_path):
    """specs/ll144-historical.yaml runs as shipped (copied with its file); its tables equal pandas to 1e-12."""
    import shutil

    folder = tmp_path / "ex"
    folder.mkdir()
    shutil.copy(SPECS / "ll144-historical.yaml", folder / "spec.yaml")
    shutil.copytree(SPECS / "ll144", folder / "ll144")
    assert run_cli("compile", "spec.yaml", cwd=folder).returncode == 0
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200", AUDIT_TEST_KILL_AT="report")  # no PDF (CI time)
    proc = subprocess.run([sys.executable, "-c", "from runtime.cli import main; main()", "execute", "--unsigned", "spec.yaml",
                           "--quiet", "--out", "out"], cwd=folder, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == -9, proc.stderr
    run = next((folder / "out" / "ll144-historical").iterdir())
    frame = pd.read_csv(folder / "ll144" / "applicants.csv", keep_default_na=False)
    labels = {"Hispanic": "hispanic_or_latino", "White": "white", "Black": "black_or_african_american",
              "NHPI": "native_hawaiian_or_pacific_islander", "Asian": "asian",
              "AIAN": "american_indian_or_alaska_native", "Two+": "two_or_more_races", "Declined": "unknown"}
    ind = pd.DataFrame({"system": "acme-match", "condition": "default", "group": frame["requisition"],
                        "sex": frame["gender"].map(SEX_LABELS), "race_ethnicity": frame["ethnicity"].map(labels),
                        "selected": frame["advanced"].astype(float)})
    ind["score"] = ind["selected"]
    assert_tables_equal(_read(run), expected(ind, basis="selection", rule=True), scoring=False)
    assert (run / "ll144-summary.html").exists() and not (run / "scores.csv").exists()
    got = _read(run)
    small = got[(got["table"] == "intersectional") & (got["category"] != "unknown") & got["n"].between(1, 2)]
    text = html_text((run / "ll144-summary.html").read_text())
    assert len(small) > 0 and text.count("n ≤ 2: could identify individuals") == len(small)
    assert b"APP-0" not in b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file()
                                    and p.name != "applicants.csv")


def test_verify_spec_rereads_the_applicant_file(selected_run, key_dir, tmp_path):
    """`audit verify --spec` recompiles the spec, re-reading the applicant file (its sha256 is in the lock): exit 0
    on the file as locked; a changed file fails it; a regulator verifies without --spec (and without the file)."""
    import shutil

    run, frame = selected_run
    folder = tmp_path / "work"
    shutil.copytree(run.parent.parent.parent, folder, ignore=shutil.ignore_patterns("out"))
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    proc = run_cli("verify", str(copy), "--key-dir", str(key_dir), "--spec", str(folder / "spec.yaml"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    frame.iloc[:-1].to_csv(folder / "applicants.csv", index=False)
    proc = run_cli("verify", str(copy), "--key-dir", str(key_dir), "--spec", str(folder / "spec.yaml"), cwd=tmp_path)
    assert proc.returncode == 6 and "changed: systems[0].data.sha256" in proc.stdout + proc.stderr, proc.stdout
    (folder / "applicants.csv").unlink()
    assert run_cli("verify", str(copy), "--key-dir", str(key_dir), cwd=tmp_path).returncode == 0
