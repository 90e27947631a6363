"""Mutations of valid specs for the bad-input fuzzer (issue 14), shared by the test and the bench.

Every case is one valid spec (block-style YAML) with one mutation applied; :func:`mutate` returns
the mutated text and the 1-based line span it touched, so the checker can ask that an error points
inside it (or at its nearest enclosing key). Issue 41 added hostile kinds: aliases of a long string
(few nodes, many bytes), YAML escapes that decode to control characters, bidi overrides and
non-characters, special files in place of the spec or its score file (a FIFO, ``/dev/zero``, a symlink
loop, a folder), and score files with lenient numbers (``4_5``, Arabic-Indic and full-width digits) or
control characters in their cells. Keys are drawn from the current JSON schema
(``schema/audit-spec.schema.json``), so keys that later issues add are fuzzed too. The random
source is a ``random.Random`` (hypothesis's ``st.randoms()`` in the test, a seeded one in the bench).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from random import Random

ROOT = Path(__file__).resolve().parents[1]

#: The score file of every fuzzed spec: 16 base candidates of job j1 under BASE and V01 (at least the largest
#: default analysis.k, 15, so that a mutation deleting analysis.k leaves a valid spec; validate reads the file).
SCORES = "job_id,cv_id,variant,score,is_true_match\n" + "".join(
    f"j1,c{i},{v},{0.5 + 0.02 * i + (0.01 if v == 'V01' else 0):.2f},{int(i % 3 == 0)}\n"
    for i in range(1, 17) for v in ("BASE", "V01"))

#: Valid specs in block style (one key per line), the seeds of every mutation.
BASES = ["""\
audit: fuzz-audit
title: Fuzzed precomputed audit
seed: 7
axes:
  sex_gender:
    slot: name
    levels:
      - M
      - F
    cues:
      M:
        - John Smith
      F:
        - Jane Smith
variants:
  reference: BASE
  table:
    BASE:
      sex_gender: M
    V01:
      sex_gender: F
jobs:
  - id: j1
systems:
  - id: vendor
    kind: precomputed
    path: scores.csv
    score_range:
      - 0
      - 1
analysis:
  k:
    counterfactual: 2
    group: 2
    merit: 2
  alpha: 0.05
  effect_size:
    sesoi: 0.2
    bh_families: all
  validity:
    positive_control:
      contrast: match
      min_d: 0.5
thresholds:
  research:
    score_delta:
      pass: 0.03
      investigate: 0.05
execution:
  out: reports
"""]

CONTROL = [chr(c) for c in (*range(0, 9), 11, 12, *range(14, 32), 0x7F, 0x85, 0x9B)] + [
    "\ufffe", "\uffff", "\ufdd0", "\u202e", "\u2066", "\u2069"]
#: YAML double-quoted escapes whose decoded character is forbidden (issue 41), and some that are allowed.
ESCAPES = ["\\0", "\\e", "\\a", "\\b", "\\x85", "\\x9b", "\\x7f", "\\N", "\\uFFFE", "\\uFFFF", "\\uFDD0",
           "\\u202E", "\\u2066", "\\U0010FFFF", "\\U0001FFFE", "\\e[31m", "\\t", "\\n", "\\_", "\\L", "\\u00e9"]
#: Score cells a lenient parser reads as numbers (``float``: underscores, any Unicode digit) and other
#: oddities (issue 41); in range [0, 1] when read leniently, so that only a strict reader refuses them.
LENIENT_NUMBERS = ["0.4_5", "0_0.5", "\u0660.\u0664\u0665", "\uff10.\uff14\uff15", "\u06f0.\u06f5",
                   "\u0e50.\u0e55", " 0.5 ", "+.5", ".5", "5e-1", "0x0.8p0", "0.5\u00a0", "0,5", "1_0", "\u0664\u0665",
                   "\uff14\uff15", "4_5", "0.5\x1b[31m", "\x1b[2J", "0.\u202e5"]
#: What replaces the spec or its score file in a "special file" case.
SPECIAL = ("fifo", "dev-zero", "loop", "folder")


def schema_keys() -> list[str]:
    """Every property name of the spec's JSON schema."""
    schema = json.loads((ROOT / "schema" / "audit-spec.schema.json").read_text())
    keys: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            keys.update(node.get("properties", {}))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    return sorted(keys)


KEYS = schema_keys()


def scalar(r: Random) -> str:
    """A YAML scalar of a random kind, as text."""
    kind = r.randrange(16)
    if kind == 0:
        return str(r.choice([0, -1, 1, 2 ** 31, 2 ** 53, 2 ** 53 + 1, 10 ** 30, -(10 ** 19)]))
    if kind == 1:
        return r.choice([".nan", ".inf", "-.inf", "1e308", "1e-320", "0.0", "-0.0", "3.5"])
    if kind == 2:
        return r.choice(["true", "false", "yes", "no", "on", "null", "~", "''", '""'])
    if kind == 3:
        return '"' + "".join(r.choice(["a", "é", "\\u0007", "\\x00", "\\n", "€", "[/x]", "{{", "%"]) for _ in range(r.randrange(1, 8))) + '"'
    if kind == 4:
        return r.choice(["!!int x", '!!bool "maybe"', "!!float abc", "!!str 3", "!foo bar", "!!python/object:os.system x",
                         "!!binary aGk=", "!!timestamp 2026-13-45", "!!set {a}", "!!omap [a: 1]"])
    if kind == 5:
        return r.choice(["*undefined", "&anc value", "[1, 2", "{a: 1", "- x", "? x", "|", ">", "@x", "`x"])
    if kind == 6:
        d = r.randrange(1, 300)
        return "[" * d + "]" * d
    if kind == 7:
        return "{" + ", ".join(f"{r.choice(KEYS)}: {r.randrange(5)}" for _ in range(r.randrange(4))) + "}"
    if kind == 8:
        return "[" + ", ".join(r.choice(["a", "1", "null", "[]", "{}"]) for _ in range(r.randrange(5))) + "]"
    if kind == 9:
        return r.choice(["../outside.csv", "/etc/passwd", "scores.csv\\x00", "x" * 300, "", " ", "."])
    if kind == 10:
        return "".join(r.choice("abcXYZ _-.:#&*!|>%@`'\"") for _ in range(r.randrange(1, 12)))
    if kind == 11:
        return r.choice(KEYS)
    if kind == 12:
        return str(r.uniform(-1e6, 1e6))
    if kind == 13:
        return "x" * r.randrange(1, 5000)
    if kind == 14:
        return "'" + "".join(chr(r.randrange(0x20, 0x2FFF)) for _ in range(r.randrange(1, 10))).replace("'", "''") + "'"
    return str(r.randrange(-5, 100))


@dataclass
class Case:
    """A mutated spec: its text, the 1-based lines the mutation touched, and what it did; ``scores``
    replaces the score file's text, ``special`` = ``(target, kind)`` puts a special file (one of
    :data:`SPECIAL`) in place of ``spec.yaml`` or ``scores.csv``."""

    text: str
    span: tuple[int, int]
    what: str
    scores: str | None = None
    special: tuple[str, str] | None = None


def _key_lines(lines: list[str]) -> list[int]:
    return [i for i, ln in enumerate(lines) if re.match(r"^\s*(- )?[A-Za-z_][\w-]*:", ln)]


def _indent(line: str) -> int:
    """Indentation of a block line; a list item's "- " counts as indentation."""
    body = line.lstrip(" ")
    ind = len(line) - len(body)
    return ind + 2 if body.startswith("- ") else ind


def _enclosing(lines: list[str], i: int) -> int:
    """Index of the nearest line above ``i`` with a smaller indentation (its enclosing key), else 0."""
    ind = _indent(lines[i]) if i < len(lines) else 0
    for j in range(min(i, len(lines)) - 1, -1, -1):
        if lines[j].strip() and _indent(lines[j]) < ind:
            return j
    return 0


def mutate(r: Random) -> Case:
    """One mutation of one base spec (see the module docstring)."""
    lines = r.choice(BASES).splitlines()
    kind = r.randrange(15)
    keyed = _key_lines(lines)
    i = r.choice(keyed)
    if kind <= 2:  # a value replaced
        head = lines[i].split(":", 1)[0]
        lines[i] = f"{head}: {scalar(r)}"
        what = "value"
    elif kind == 3:  # a key renamed (to a schema key or to noise)
        key = r.choice(KEYS) if r.random() < 0.6 else scalar(r)
        lines[i] = re.sub(r"[A-Za-z_][\w-]*:", lambda _m: f"{key}:", lines[i], count=1)
        what = "key"
    elif kind == 4:  # a line deleted: the span is its enclosing key to the line that moved into its place
        del lines[i]
        return Case("\n".join(lines) + "\n", (_enclosing(lines, min(i, len(lines) - 1)) + 1, i + 1), "delete")
    elif kind == 5:  # a schema key inserted below a mapping key
        indent = len(lines[i]) - len(lines[i].lstrip(" ")) + 2
        lines.insert(i + 1, " " * indent + f"{r.choice(KEYS)}: {scalar(r)}")
        i += 1
        what = "insert"
    elif kind == 6:  # a control or non-character inside a line
        pos = r.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:pos] + r.choice(CONTROL) + lines[i][pos:]
        what = "control"
    elif kind == 7:  # an anchor and a merge key
        lines.insert(0, "x-defaults: &defaults {" + f"{r.choice(KEYS)}: {r.randrange(3)}" + "}")
        i = r.choice(_key_lines(lines[1:])) + 1
        indent = len(lines[i]) - len(lines[i].lstrip(" ")) + 2
        lines.insert(i + 1, " " * indent + "<<: *defaults")
        return Case("\n".join(lines) + "\n", (1, i + 2), "merge")  # the anchor (line 1) to the merge key
    elif kind == 8:  # an alias bomb in front
        levels = r.randrange(3, 12)
        bomb = ["b0: &b0 [x]"] + [f"b{k}: &b{k} [" + ", ".join([f"*b{k - 1}"] * 9) + "]" for k in range(1, levels)]
        lines[0:0] = bomb
        return Case("\n".join(lines) + "\n", (1, levels), "alias bomb")
    elif kind == 9:  # a deep block nesting
        depth = r.randrange(10, 200)
        indent = len(lines[i]) - len(lines[i].lstrip(" "))
        head = lines[i].split(":", 1)[0]
        lines[i] = f"{head}:"
        lines[i + 1:i + 1] = [" " * (indent + 2 * (k + 1)) + f"n{k}:" for k in range(depth)]
        return Case("\n".join(lines) + "\n", (_enclosing(lines, i) + 1, i + 1 + depth), "nesting")
    elif kind == 11:  # aliases of one long string: few nodes, many bytes (issue 41)
        size = r.choice([1_000, 30_000, 100_000, 120_000])
        t = next(k for k, ln in enumerate(lines) if ln.startswith("title:"))
        lines[t] = 'title: &long "' + "x" * size + '"'
        m = next(k for k, ln in enumerate(lines) if ln.strip() == "M:")
        n = r.choice([1, 5, 50, 90, 120, 500, 2000])
        indent = " " * (len(lines[m]) - len(lines[m].lstrip()) + 2)
        lines[m + 1:m + 1] = [indent + "- *long"] * n if r.random() < 0.5 else \
            [indent + "- [" + ", ".join(["*long"] * n) + "]"]
        return Case("\n".join(lines) + "\n", (1, m + 2 + n), "long aliases")
    elif kind == 12:  # a double-quoted value whose escapes decode to a forbidden (or allowed) character
        head = lines[i].split(":", 1)[0]
        body = "".join(r.choice(["a", "é", " ", r.choice(ESCAPES)]) for _ in range(r.randrange(1, 6)))
        lines[i] = f'{head}: "{body}"'
        what = "escape"
    elif kind == 13:  # a special file in place of the spec or of its score file
        target = r.choice(["spec.yaml", "scores.csv"])
        text = "\n".join(lines) + "\n"
        p = next(k for k, ln in enumerate(lines) if "path: scores.csv" in ln)
        span = (1, len(lines)) if target == "spec.yaml" else (_enclosing(lines, p) + 1, p + 1)
        return Case(text, span, f"special {target}", special=(target, r.choice(SPECIAL)))
    elif kind == 14:  # a score file with a lenient number or a control character in a cell
        rows = SCORES.splitlines()
        k = r.randrange(1, len(rows))
        cells = rows[k].split(",")
        col = 3 if r.random() < 0.8 else r.randrange(len(cells))
        cells[col] = r.choice(LENIENT_NUMBERS)
        rows[k] = ",".join(cells)
        p = next(k for k, ln in enumerate(lines) if "path: scores.csv" in ln)
        return Case("\n".join(lines) + "\n", (_enclosing(lines, p) + 1, p + 1), "score cell",
                    scores="\n".join(rows) + "\n")
    else:  # a byte-level change of the whole file
        text = "\n".join(lines) + "\n"
        choice = r.randrange(3)
        text = ("\ufeff" + text) if choice == 0 else text.replace("\n", "\r\n") if choice == 1 else text + "\x00"
        return Case(text, (1, text.count("\n") + 1), ["bom", "crlf", "nul at end"][choice])
    return Case("\n".join(lines) + "\n", (_enclosing(lines, i) + 1, i + 1), what)


LOCATED = re.compile(r"^error: (?P<file>[^\n]*?):(?P<line>\d+):(?P<col>\d+): ", re.M)


def run_case(case: Case, folder: Path) -> tuple[int, str, float]:
    """``audit validate`` on the case in this process: (exit code, stderr, seconds)."""
    from runtime.cli import main

    folder.mkdir(parents=True, exist_ok=True)
    for name in ("scores.csv", "spec.yaml"):  # a FIFO, link or folder of the previous case: never written into
        p = folder / name
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.is_symlink() or p.exists():
            p.unlink()
    (folder / "scores.csv").write_text(case.scores if case.scores is not None else SCORES, encoding="utf-8")
    spec = folder / "spec.yaml"
    spec.write_bytes(case.text.encode("utf-8", "surrogatepass"))
    if case.special is not None:
        target, kind = case.special
        p = folder / target
        p.unlink()
        if kind == "fifo":
            os.mkfifo(p)
        elif kind == "dev-zero":
            p.symlink_to("/dev/zero")
        elif kind == "loop":
            p.symlink_to(p.name)
        else:
            p.mkdir()
    err = io.StringIO()
    start = time.perf_counter()
    code = 0
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            main(["validate", str(spec)])
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return code, err.getvalue(), time.perf_counter() - start


def check(case: Case, code: int, stderr: str, seconds: float) -> str:
    """'' when the case behaved, else what went wrong: exit 0 or 2 only, under 10 s, and every 2
    located (``line:col``), one error inside the mutated span or at its enclosing key, unless the
    error is about the whole file (size, encoding) or names a value the mutation wrote elsewhere."""
    if seconds > 10:
        return f"took {seconds:.1f} s (a hang)"
    if code not in (0, 2):
        return f"exit {code}: {stderr[-800:]}"
    if code == 0:
        return ""
    if "Traceback" in stderr:
        return "traceback on exit 2"
    located = [(int(m["line"]), int(m["col"])) for m in LOCATED.finditer(stderr)]
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error: ")]
    if not located:
        whole_file = ("cannot read the spec", "is not UTF-8", "a spec may be at most", "must be a YAML mapping")
        return "" if any(w in stderr for w in whole_file) else f"unlocated: {errors[:2]}"
    lo, hi = case.span
    if "YAML syntax error" in stderr and any(ln >= lo for ln, _ in located):
        return ""  # a parser notices a broken structure where it reads the first token that cannot follow
    if any(lo <= ln <= hi for ln, _ in located) or case.what in ("bom", "crlf", "nul at end"):
        return ""
    # a cross reference: the mutation renamed or removed a name another key uses, and the error says so
    words = set(re.findall(r"[\w-]+", " ".join(case.text.splitlines()[lo - 1:hi]))) - {"", "-"}
    if any(w in " ".join(errors) for w in words if len(w) > 1):
        return ""
    return f"no error inside lines {lo}-{hi}: {errors[:2]}"
