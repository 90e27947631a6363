"""Reading and checking an employer's file of historical applicants (an ``applicant_file`` system; issue 34).

One reader for ``audit validate`` / ``compile`` (every problem before the lock) and for the runtime's
``applicant_file`` adapter (the same checks again at execute, on the locked file). Like the score-file
reader (:mod:`compiler.score_file`, whose CSV reading, delimiter sniffing and line-number texts it
reuses) it reports **all** problems of a file in one pass, each naming the CSV lines an editor shows
(header = line 1), and never raises for bad data.

The product's columns are ``id, sex, race_ethnicity``, then ``selected`` (``outcome: selected``) or
``score`` (``outcome: score``), and optionally ``group`` (a table set per value; ``ALL`` without it)
and ``date`` (ISO ``YYYY-MM-DD``). ``columns`` maps them to the file's own names.

The rows are personal data (sex and race/ethnicity of named applicants, GDPR Art. 9): they are
returned in memory only; messages name line numbers and labels, never an applicant id.
"""

from __future__ import annotations

import datetime
import difflib
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.score_file import (DELIMITER_NAMES, lines_text, parse_bool, parse_number, read_csv_records)

#: The group of every applicant when the file has no ``group`` column.
ALL_GROUP = "ALL"

MSG_READ = "cannot read the CSV: {err}"
MSG_NO_ROWS = "the CSV has a header but no rows"
MSG_COLUMNS = ("missing column(s) {missing}; the header found (delimiter {delim}) is: {header}; required: {required} "
               "(optional: group, date); map the file's names with columns: {{id: ..., sex: ...}}")
MSG_ID_EMPTY = "empty applicant id at {lines}"
MSG_ID_DUP = "applicant id repeated at {lines} (each applicant once; ids not shown: personal data)"
MSG_LABEL = ("{column} label(s) {labels} at {lines} are not in labels.{key}; mapped labels: {allowed}"
             " (map every label the file uses, \"\" for an empty cell)")
MSG_SELECTED = "selected is not 1/0, true/false or yes/no at {lines} (got {values})"
MSG_SCORE_EMPTY = "empty score at {lines}"
MSG_SCORE_NAN = "score is not a number at {lines} (got {values})"
MSG_SCORE_RANGE = "score outside score_range {rng} at {lines} (got {values})"
MSG_DATE = "date is not an ISO date YYYY-MM-DD at {lines} (got {values})"
MSG_DATE_RANGE = "date outside disclosure.data [{lo}, {hi}] at {lines} (got {values})"


@dataclass
class ApplicantFile:
    """What :func:`read_applicant_file` found.

    Attributes
    ----------
    rows : list of dict
        One per applicant: ``id, group, sex, race_ethnicity`` (category ids), ``selected`` (1/0 or None),
        ``score`` (float or None), ``line``. Personal data: kept in memory only.
    problems : list of str
        Every problem found, each naming its CSV lines (empty when the file is sound).
    delimiter : str
        The delimiter used.
    mapping : dict
        Product column -> the file's column.
    sha256 : str
        The file's sha256 (hex), read from the same bytes.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    delimiter: str = ","
    mapping: dict[str, str] = field(default_factory=dict)
    sha256: str = ""


def _values(values: Sequence[str], limit: int = 5) -> str:
    vals = list(dict.fromkeys(values))
    return ", ".join(repr(v) for v in vals[:limit]) + (" ..." if len(vals) > limit else "")


def _labels_with_hint(labels: Sequence[str], allowed: Sequence[str]) -> str:
    out = []
    for v in list(dict.fromkeys(labels))[:5]:
        close = difflib.get_close_matches(v, list(allowed), n=1, cutoff=0.6)
        out.append(f"{v!r} (did you mean {close[0]!r}?)" if close else repr(v))
    return ", ".join(out) + (" ..." if len(set(labels)) > 5 else "")


def read_applicant_file(path: Path, *, outcome: str, labels: Mapping[str, Mapping[str, str]],
                        score_range: tuple[float, float] | None = None, columns: Mapping[str, str] | None = None,
                        delimiter: str | None = None, dates: tuple[datetime.date, datetime.date] | None = None
                        ) -> ApplicantFile:
    """Read and check an applicant file.

    Parameters
    ----------
    path : pathlib.Path
        The CSV file.
    outcome : {"selected", "score"}
        Which column holds the tool's outcome.
    labels : mapping
        ``{"sex": {label: category id}, "race_ethnicity": {label: category id}}``; a cell is stripped
        before it is looked up (``""``: an empty cell).
    score_range : (float, float) or None
        [low, high] of the scores (``outcome="score"``).
    columns : mapping or None
        Product column -> the file's column.
    delimiter : str or None
        None: sniffed.
    dates : (datetime.date, datetime.date) or None
        The data range of ``disclosure.data``; a date outside it is a problem.

    Returns
    -------
    ApplicantFile
        The rows (when there is no problem) and every problem; never raises for bad data.
    """
    out = ApplicantFile()
    try:
        out.sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        header, records, lines, delim = read_csv_records(path, delimiter)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        out.problems.append(MSG_READ.format(err=exc))
        return out
    out.delimiter = delim
    names = dict(columns or {})
    required = ["id", "sex", "race_ethnicity", outcome]
    wanted = required + [c for c in ("group", "date") if c in names or c in header]
    mapping = {c: names.get(c, c) for c in wanted}
    missing = [c for c in required + [c for c in ("group", "date") if c in names] if mapping[c] not in header]
    if missing:
        out.problems.append(MSG_COLUMNS.format(
            missing=", ".join(f"{c} (looked for {mapping[c]!r})" if mapping[c] != c else c for c in missing),
            delim=DELIMITER_NAMES.get(delim, repr(delim)), header=", ".join(header) or "(empty)",
            required=", ".join(required)))
        return out
    out.mapping = mapping
    if not records:
        out.problems.append(MSG_NO_ROWS)
        return out
    col = {c: header.index(mapping[c]) for c in mapping}
    bad: dict[str, list[tuple[int, str]]] = {}

    def flag(kind: str, line: int, value: str = "") -> None:
        bad.setdefault(kind, []).append((line, value))

    seen: set[str] = set()
    rows = []
    lo, hi = score_range if score_range is not None else (None, None)
    for rec, line in zip(records, lines):
        ident = rec[col["id"]].strip()
        if not ident:
            flag("id_empty", line)
        elif ident in seen:
            flag("id_dup", line)
        seen.add(ident)
        cats = {}
        for key in ("sex", "race_ethnicity"):
            label = rec[col[key]].strip()
            cat = labels[key].get(label)
            if cat is None:
                flag(key, line, label)
            cats[key] = cat
        selected = score = None
        if outcome == "selected":
            selected = parse_bool(rec[col["selected"]])
            if selected is None:
                flag("selected", line, rec[col["selected"]].strip())
        else:
            cell = rec[col["score"]].strip()
            score = parse_number(cell)
            if not cell:
                flag("score_empty", line)
            elif score is None:
                flag("score_nan", line, cell)
            elif lo is not None and not lo <= score <= hi:
                flag("score_range", line, cell)
        if "date" in col:
            cell = rec[col["date"]].strip()
            try:
                day = datetime.date.fromisoformat(cell) if len(cell) == 10 else None
            except ValueError:
                day = None
            if day is None:
                flag("date", line, cell)
            elif dates is not None and not dates[0] <= day <= dates[1]:
                flag("date_range", line, cell)
        group = rec[col["group"]].strip() if "group" in col else ALL_GROUP
        rows.append({"id": ident, "group": group or ALL_GROUP, **cats, "selected": selected,
                     "score": score if outcome == "score" else float(selected) if selected is not None else None,
                     "line": line})

    def lines_of(kind: str) -> str:
        return lines_text([ln for ln, _ in bad[kind]])

    def values_of(kind: str) -> str:
        return _values([v for _, v in bad[kind]])

    for kind, msg in (("id_empty", MSG_ID_EMPTY), ("id_dup", MSG_ID_DUP)):
        if kind in bad:
            out.problems.append(msg.format(lines=lines_of(kind)))
    for key, column in (("sex", "sex"), ("race_ethnicity", "race/ethnicity")):
        if key in bad:
            allowed = list(labels[key])
            out.problems.append(MSG_LABEL.format(column=column, key=key, lines=lines_of(key),
                                                 labels=_labels_with_hint([v for _, v in bad[key]], allowed),
                                                 allowed=", ".join(repr(a) for a in allowed)))
    if "selected" in bad:
        out.problems.append(MSG_SELECTED.format(lines=lines_of("selected"), values=values_of("selected")))
    if "score_empty" in bad:
        out.problems.append(MSG_SCORE_EMPTY.format(lines=lines_of("score_empty")))
    if "score_nan" in bad:
        out.problems.append(MSG_SCORE_NAN.format(lines=lines_of("score_nan"), values=values_of("score_nan")))
    if "score_range" in bad:
        out.problems.append(MSG_SCORE_RANGE.format(rng=[lo, hi], lines=lines_of("score_range"),
                                                   values=values_of("score_range")))
    if "date" in bad:
        out.problems.append(MSG_DATE.format(lines=lines_of("date"), values=values_of("date")))
    if "date_range" in bad:
        out.problems.append(MSG_DATE_RANGE.format(lo=dates[0], hi=dates[1], lines=lines_of("date_range"),
                                                  values=values_of("date_range")))
    if not out.problems:
        out.rows = rows
    return out
