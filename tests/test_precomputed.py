"""The precomputed system: clear errors naming CSV lines; scores pass through unchanged."""

from __future__ import annotations


import pandas as pd
import pytest

from compiler import compile_spec
from compiler.errors import InputDataError, SpecError
from conftest import TINY_SCORES, TINY_SPEC, run_cli
from runtime.pipeline.engine import score_system
from runtime.systems import ScoreRequest, adapter_for


def _score(spec_path, csv_text):
    """The runtime adapter on ``csv_text`` (compiled on the good file first: validate would refuse a bad
    one before the lock, which tests/test_score_file.py checks)."""
    (spec_path.parent / "scores.csv").write_text(TINY_SCORES)
    c = compile_spec(spec_path)
    (spec_path.parent / "scores.csv").write_text(csv_text)
    req = ScoreRequest(jobs={"j1": None}, resumes=None, variants=["BASE", "V01"], spec_folder=spec_path.parent)
    return score_system(adapter_for("precomputed")(c.resolved["systems"][0]), req)


@pytest.fixture
def spec(write_spec):
    return write_spec(TINY_SPEC, **{"scores.csv": TINY_SCORES})


def test_scores_pass_through(spec):
    out = _score(spec, TINY_SCORES)
    expected = pd.read_csv(spec.parent / "scores.csv")
    assert out["score"].tolist() == expected["score"].tolist()
    assert out["is_true_match"].tolist() == expected["is_true_match"].tolist()


@pytest.mark.parametrize("edit, message", [
    (("j1,c3,BASE", "j9,c3,BASE"), "scores.csv: system 'vendor': unknown job_id 'j9' at line 6; jobs in the spec: j1"),
    (("j1,c3,V01", "j1,c3,V07"), "scores.csv: system 'vendor': unknown variant 'V07' at line 7; variants in the spec: BASE, V01"),
    (("0.45,0", "1.45,0"), "scores.csv: system 'vendor': score outside score_range [0, 1] at line 7 (values '1.45'); the file's scores run from 0.3 to 1.45. If that is the scale of the system, set systems[id=vendor].score_range: [low, high]"),
    (("0.45,0", "abc,0"), "scores.csv: system 'vendor': score is not a number ('abc') at line 7 (column 'score'); a "
                          "score is written with ASCII digits as [+-]digits[.digits][e[+-]digits], e.g. 72, 0.85 or -1.5e-3"),
    (("j1,c4,V01,0.6,0\n", ""), "scores.csv: system 'vendor': 1 missing (job_id, cv_id, variant) cell(s), e.g. (j1, c4, V01); every base candidate needs a score under every variant"),
    (("j1,c4,V01", "j1,c4,BASE"), "scores.csv: system 'vendor': duplicate (job_id, cv_id, variant) at lines 8, 9"),
    (("0.6,0", "0.6,1"), "scores.csv: system 'vendor': is_true_match differs between variants of the same (job_id, cv_id) at lines 8, 9"),
    (("0.6,0", "0.6,2"), "scores.csv: system 'vendor': is_true_match must be 1/0, true/false or yes/no at line 9 (values '2')"),
    (("0.6,0", "0.6,TRUE"), "scores.csv: system 'vendor': is_true_match differs between variants of the same (job_id, cv_id) at lines 8, 9"),
    (("0.45,0", "NA,0"), "scores.csv: system 'vendor': score is empty or missing ('NA') at line 7"),
    (("j1,c3,V01", "j1,,V01"), "scores.csv: system 'vendor': empty cv_id at line 7"),
    ((TINY_SCORES[TINY_SCORES.index("\n") + 1:], ""), "scores.csv: system 'vendor': the CSV has a header but no rows"),
    (("j1,", "j2,"), "scores.csv: system 'vendor': unknown job_id 'j2' at lines 2, 3, 4, 5, 6, 7, 8, 9; jobs in the spec: j1"),
])
def test_bad_csv_names_the_rows(spec, edit, message):
    with pytest.raises(InputDataError) as err:
        _score(spec, TINY_SCORES.replace(*edit))
    prefix = "scores.csv: system 'vendor': "
    problems = str(err.value)[len(prefix):].split("\n  - ")
    assert str(err.value).startswith(prefix) and message[len(prefix):] in problems


def test_na_is_an_id_not_a_missing_value(spec):
    out = _score(spec, TINY_SCORES.replace("c3", "NA"))
    assert "NA" in set(out["cv_id"])


def test_a_job_without_rows_is_an_error(write_spec):
    spec = write_spec(TINY_SPEC.replace("- {id: j1}", "- {id: j1}\n  - {id: j2}"), **{"scores.csv": TINY_SCORES})
    with pytest.raises(SpecError, match="job\\(s\\) j2 of the spec have no rows"):  # before the lock (issue 15)
        compile_spec(spec)
    spec.write_text(spec.read_text().replace("  - {id: j2}\n", ""))
    c = compile_spec(spec)
    req = ScoreRequest(jobs={"j1": None, "j2": None}, resumes=None, variants=["BASE", "V01"], spec_folder=spec.parent)
    with pytest.raises(InputDataError, match="job\\(s\\) j2 of the spec have no rows"):  # and again at execute
        score_system(adapter_for("precomputed")(c.resolved["systems"][0]), req)


def test_a_bad_score_file_is_refused_before_the_lock_without_traceback(spec, tmp_path):
    """Issue 15: the data is checked by compile (exit 2), even with --amend; the lock is kept as it was."""
    assert run_cli("compile", "spec.yaml", cwd=tmp_path).returncode == 0
    lock = (tmp_path / "spec.lock.json").read_bytes()
    (tmp_path / "scores.csv").write_text(TINY_SCORES.replace("is_true_match", "is_match"))
    proc = run_cli("compile", "spec.yaml", "--amend", "--reason", "new score file", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert ("spec.yaml:17:43: systems[0].path: scores.csv: unknown column(s) 'is_match' (did you mean "
            "'is_true_match'?); allowed: job_id, cv_id, variant, score, is_true_match") in proc.stderr
    assert (tmp_path / "spec.lock.json").read_bytes() == lock
    assert not (tmp_path / "reports").exists()


def test_line_numbers_count_blank_lines_and_multiline_fields(spec):
    # The bad row is on line 9 of the file as an editor shows it: a blank line (line 3) and a quoted
    # cv_id spanning two lines (lines 5-6) come before it.
    lines = TINY_SCORES.splitlines()
    header, rows = lines[0], lines[1:]
    text = "\n".join([header, rows[0], "", rows[1].replace("j1,c1,", 'j1,"c\n1",', 1)] + rows[2:]) + "\n"
    text = text.replace("j1,c3,V01,", "j1,c3,V07,", 1)
    assert text.splitlines()[8].startswith("j1,c3,V07")  # line 9 (a reader counting records says 7)
    with pytest.raises(InputDataError) as err:
        _score(spec, text)
    assert "unknown variant 'V07' at line 9;" in str(err.value)


def test_a_row_with_too_many_fields_is_named_by_line(spec):
    text = TINY_SCORES.replace("j1,c2,BASE,0.7,1", "j1,c2,BASE,0.7,1,extra")
    with pytest.raises(InputDataError) as err:
        _score(spec, text)
    assert "line 4 has 6 field(s), the header has 5" in str(err.value)
