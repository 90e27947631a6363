"""Issue 37 §2: errors on keys a YAML merge key brought in are located where written, at any depth and in
every block of the schema (hypothesis); at most 20 lines per kind of error; a symlink loop, ``%YAML 1.3`` and
a CSV field with a quoted line break give located errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.errors import MAX_PER_KIND, Issue, SpecError, bounded
from compiler.load import load_spec
from conftest import TINY_SCORES, TINY_SPEC, run_cli
from spec_fuzz import BASES as FUZZ_BASES

ROOT = Path(__file__).resolve().parents[1]
#: Specs whose every mapping is a merge target: the tiny score-file spec and the shipped specs.
BASES = {"tiny": TINY_SPEC, **{p.name: p.read_text() for p in sorted((ROOT / "specs").glob("*.yaml"))}}
BASES |= {f"fuzz-{n}": text for n, text in enumerate(FUZZ_BASES)}  # the fuzzer's seeds too
UNKNOWN = "zz_unknown"


def _emit(node, loc: tuple, target: tuple, indent: int = 0) -> list[str]:
    """Block YAML of plain data (scalars and lists as JSON), the mapping at ``target`` written as a lone
    ``<<: *m`` merge key."""
    pad = " " * indent
    if loc == target:
        return [f"{pad}<<: *m"]
    out = []
    for key, value in node.items():
        k = json.dumps(key)
        if isinstance(value, dict) and value:
            out.append(f"{pad}{k}:")
            out += _emit(value, loc + (key,), target, indent + 2)
        elif isinstance(value, list) and value and all(isinstance(v, dict) and v for v in value):
            out.append(f"{pad}{k}:")
            for n, item in enumerate(value):
                body = _emit(item, loc + (key, n), target, indent + 4)
                out.append(f"{pad}  - " + body[0].lstrip())
                out += body[1:]
        else:
            out.append(f"{pad}{k}: {json.dumps(value, default=str)}")
    return out


def _mappings(node, loc: tuple = ()) -> list[tuple]:
    """Every non-empty mapping's location (the root excluded), depth first."""
    out = []
    if isinstance(node, dict):
        if loc and node:
            out.append(loc)
        for k, v in node.items():
            out += _mappings(v, loc + (k,))
    elif isinstance(node, list) and all(isinstance(v, dict) and v for v in node):
        for n, v in enumerate(node):
            out += _mappings(v, loc + (n,))
    return out


def _at(node, loc: tuple):
    for part in loc:
        node = node[part]
    return node


def _cases() -> list[tuple[str, tuple]]:
    """(base, a mapping of it): every non-empty mapping of every base, the block that is merged in."""
    out = []
    for name, text in BASES.items():
        plain = read_yaml_text(text)
        for loc in _mappings(plain):
            out.append((name, loc))
    return out


def read_yaml_text(text: str):
    from ruamel.yaml import YAML

    from compiler.load import _plain

    return _plain(YAML(typ="rt").load(text))


CASES = _cases()


@settings(max_examples=100, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(CASES), st.data())
def test_an_unknown_key_merged_in_from_an_anchor_is_located_where_it_is_written(tmp_path_factory, case, data):
    name, block = case
    plain = read_yaml_text(BASES[name])
    content = json.loads(json.dumps(_at(plain, block), default=str))
    inner = data.draw(st.sampled_from([()] + [loc for loc in _mappings(content)]))  # any depth inside the block
    _at(content, inner)[UNKNOWN] = 1
    anchor = "x-m: &m " + json.dumps(content)
    text = "\n".join([anchor] + _emit(plain, (), block)) + "\n"
    folder = tmp_path_factory.mktemp("merge")
    (folder / "spec.yaml").write_text(text)
    try:
        load_spec(folder / "spec.yaml")
    except SpecError as err:
        issues = err.issues
    else:  # pragma: no cover - x-m alone is an unknown top-level key
        pytest.fail("no error")
    assert all(i.line is not None for i in issues)
    mine = [i for i in issues if i.path.endswith(UNKNOWN)]
    if not mine:  # a free-form mapping (variants.table, cues, thresholds tiers ...) takes any key
        return
    key = anchor.index(json.dumps(UNKNOWN)) + 1  # an unknown key of a model: at the key
    value = key + len(json.dumps(UNKNOWN) + ": ")  # a free-form mapping's value of the wrong type: at the value
    assert {(i.line, i.col) for i in mine} <= {(1, key), (1, value)}, (text[:500], mine)


def test_a_bad_bound_in_a_mapping_merged_under_thresholds_is_located_at_the_anchor(write_spec, tmp_path):
    """The issue's case: a merged mapping holding only ``<<: *b`` under thresholds (TypeError, exit 1)."""
    spec = write_spec(TINY_SPEC.replace("thresholds:\n  research:\n    score_delta: {pass: 0.03, investigate: 0.05}\n",
                                        "thresholds:\n  operational:\n    score_delta: &b {pass: 0.05, investigate: "
                                        "0.03}\n  research:\n    score_delta:\n      <<: *b\n"),
                      **{"scores.csv": TINY_SCORES})
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "spec.yaml:22:47: thresholds.research.score_delta.investigate: score_delta is lower-is-better" in proc.stderr


def test_at_most_twenty_lines_per_kind_then_how_many_more(write_spec, tmp_path):
    n = 5000
    spec = write_spec(TINY_SPEC.replace("jobs:\n  - {id: j1}", "jobs: [" + ",".join(["x"] * n) + "]"),
                      **{"scores.csv": TINY_SCORES})
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    jobs = [ln for ln in lines if ": jobs[" in ln]
    assert len(jobs) == MAX_PER_KIND + 1
    assert jobs[-1] == f"error: spec.yaml:14:{8 + 2 * MAX_PER_KIND}: jobs[]: and {n - MAX_PER_KIND:,} more like it"


def test_kinds_are_counted_apart():
    issues = [Issue("s.yaml", 1, 2 * k + 1, f"jobs[{k}]", f"bad value {k!r}") for k in range(25)] + \
        [Issue("s.yaml", 2, 1, "seed", "not an integer")]
    lines = bounded(issues, limit=3)
    assert lines == [str(i) for i in issues[:3]] + ["s.yaml:1:7: jobs[]: and 22 more like it", str(issues[-1])]


def test_a_symlink_loop_and_yaml_1_3_are_located_exit_2(tmp_path):
    (tmp_path / "loop.yaml").symlink_to("loop.yaml")
    (tmp_path / "v13.yaml").write_text("%YAML 1.3\n---\n" + TINY_SPEC)
    (tmp_path / "scores.csv").write_text(TINY_SCORES)
    proc = run_cli("validate", "loop.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: loop.yaml: cannot read the spec: the path is a symbolic link loop")
    proc = run_cli("validate", "v13.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: v13.yaml:1:7: %YAML 1.3 is not supported")


def test_a_quoted_line_break_keeps_the_line_numbers_and_every_message_line_located(write_spec, tmp_path):
    scores = TINY_SCORES.replace("j1,c2,BASE,0.7,1", 'j1,"c\n2",BASE,0.7,1').replace("j1,c4,V01,0.6,0", "j1,c4,V01,x,0")
    spec = write_spec(TINY_SPEC, **{"scores.csv": scores.replace("is_true_match", '"is_true\nmatch"')})
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert all(ln.startswith("error: spec.yaml:") for ln in lines), lines
    assert any("score is not a number ('x') at line 11 " in ln for ln in lines), lines
