"""Reading and checking a vendor's score export (a ``precomputed`` system's CSV; issue 15).

One reader for ``audit validate`` / ``compile`` (every problem before the lock) and for the runtime's
``precomputed`` adapter (the same checks again at execute, on the locked file). It reports **all**
problems of a file in one pass, each with the CSV line numbers an editor shows (header = line 1),
and never raises for bad data.

The product's columns are ``job_id, cv_id, variant, score`` and optionally ``is_true_match``. A
vendor's own names are mapped with ``systems[].columns`` (product name -> the file's name); the
delimiter is ``systems[].delimiter`` or sniffed among ``, ; TAB |``. When the header lacks product
columns and no mapping is given, the columns are guessed from their names and contents, the guess is
offered as the ``columns:`` block to write, and the rows are still checked with it, so that one run
shows every problem.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The product's column names, in their order in messages.
COLUMNS = ("job_id", "cv_id", "variant", "score", "is_true_match")
REQUIRED = COLUMNS[:4]
#: Delimiters a score file may use (``systems[].delimiter``), sniffed in this order of preference.
DELIMITERS = (",", ";", "\t", "|")
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
#: Boolean cells of ``is_true_match``, compared case-insensitively after stripping.
TRUE_WORDS = ("1", "true", "yes")
FALSE_WORDS = ("0", "false", "no")
#: Words in a vendor's column name that suggest a product column (the first match wins).
NAME_HINTS = {
    "job_id": ("job", "requisition", "req", "position", "vacancy", "posting", "role"),
    "cv_id": ("cv", "candidate", "applicant", "resume", "résumé", "person", "profile"),
    "variant": ("variant", "persona", "condition", "treatment", "version", "arm"),
    "score": ("score", "rating", "match_score", "fit", "rank"),
    "is_true_match": ("true_match", "qualified", "is_match", "relevant", "label", "meets", "quals",
                      "requirements", "eligible"),
}
#: Largest score file read (bytes; issue 41): about four million rows of a vendor's export. Only a regular
#: file is read (a FIFO or a device never is) and the cap applies to the bytes read, not to ``st_size``.
MAX_CSV_BYTES = 256 * 1024 * 1024
#: Cells read as a missing score (reported as empty, not as non-numeric).
MISSING_WORDS = ("", "na", "n/a", "nan", "null", "none", "-")

MSG_FIELDS = "line {line} has {n} field(s), the header has {m} ({header})"
MSG_READ = "cannot read the CSV: {err}"
MSG_CELL_CHAR = ("line {line}, column {column}: the cell {cell} holds character {code}, which is not allowed "
                 "(control characters, Unicode non-characters and bidirectional overrides); only text, tab and "
                 "line breaks are")
MSG_NO_HEADER = "the file is empty (no header line)"
MSG_NO_ROWS = "the CSV has a header but no rows"
MSG_COLUMNS_MISSING = ("missing column(s) {missing}; the header found (delimiter {delim}) is: {header}; "
                       "required: {required} (optional: is_true_match)")
MSG_SUGGEST = ("the columns look like {pairs}: map them with {mapping} under {key} "
               "(the rows below were checked with this guess)")
MSG_MAPPED_ABSENT = "{key}.{column}: the file has no column {name!r}; the header found (delimiter {delim}) is: {header}"
MSG_COLUMNS_UNKNOWN = ("unknown column(s) {unknown}; allowed: {allowed} (a column under another name is mapped "
                       "with {key}; name any other column in {ignore} to skip it)")
MSG_EMPTY_KEY = "empty {column} at {rows}"
MSG_UNKNOWN_JOB = "unknown job_id {values} at {rows}; jobs in the spec: {allowed}"
MSG_UNKNOWN_VARIANT = "unknown variant {values} at {rows}; variants in the spec: {allowed}"
MSG_CONTROL_MISSING = ("{kind} control {control} has no row for the base candidate(s) of the reference rows at "
                       "{rows}; every (job_id, cv_id) of the reference variant needs a row with variant {control}")
MSG_CONTROL_ORPHAN = ("{kind} control row(s) without a reference ({reference}) row for their (job_id, cv_id) "
                      "at {rows}")
MSG_JOB_ABSENT = "job(s) {jobs} of the spec have no rows; every job needs a score for every base candidate and variant"
MSG_SCORE_EMPTY = "score is empty or missing ({values}) at {rows}"
MSG_SCORE_NAN = ("score is not a number ({values}) at {rows} (column {column!r}{mark}); a score is written with "
                 "ASCII digits as [+-]digits[.digits][e[+-]digits], e.g. 72, 0.85 or -1.5e-3")
#: The one form of a number in a score file (issue 41): ASCII digits only, so that ``4_5`` (Python's digit
#: grouping), Arabic-Indic ``٤٥`` or full-width ``４５`` are refused instead of read as 45.
NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
MSG_SCORE_RANGE = ("score outside score_range [{lo:g}, {hi:g}] at {rows} (values {values}); the file's scores run "
                   "from {smin:g} to {smax:g}. If that is the scale of the system, set {key}: [low, high]")
MSG_DUPLICATE = "duplicate (job_id, cv_id, variant) at {rows}"
MSG_MISSING_CELLS = ("{n} missing (job_id, cv_id, variant) cell(s), e.g. {examples}; every base candidate "
                     "needs a score under every variant")
MSG_MATCH_VALUES = "is_true_match must be 1/0, true/false or yes/no at {rows} (values {values})"
MSG_MATCH_INCONSISTENT = "is_true_match differs between variants of the same (job_id, cv_id) at {rows}"
MSG_K_TOO_SMALL = ("job {job!r} has {n} base candidates, fewer than the largest analysis.k ({family}: {k}); "
                   "every shortlist would hold the whole pool")
#: Problems of the mapping keys of a ``precomputed`` system (issue 37 §1), each located at its key.
MSG_IGNORED_ABSENT = ("ignore_columns: the file has no column {name!r}; the header found (delimiter {delim}) is: "
                      "{header}")
MSG_IGNORED_MAPPED = "ignore_columns: {name!r} is also mapped ({where}); a column is either read or ignored"
MSG_VALUES_ABSENT = "values: the file has no column {name!r}; the header found (delimiter {delim}) is: {header}"
MSG_VALUES_UNUSED = ("values: column {name!r} is not read as job_id, variant, is_true_match or an axis of "
                     "variant_from, so its values cannot be mapped")
MSG_VALUES_TARGET = "values.{column}: {value!r} maps to {target!r}, which is not {what} in the spec; allowed: {allowed}"
MSG_VALUES_UNMAPPED = ("{column}: {values} at {rows} {verb} not mapped and {verb} not {what} of the spec; "
                       "allowed: {allowed}{suggest}")
MSG_DECIMAL_COMMA = "; these are written with a decimal comma: write decimal: ',' under {key}"
MSG_CASE_ONLY = "; these differ from the spec's ids by case only: write case_insensitive: true under {key}"
MSG_VALUES_COLLIDE = ("values.{column}: {pairs} map to the same {product}, which makes duplicate (job_id, cv_id, "
                      "variant) rows at {rows}")
MSG_VARIANT_FROM_ABSENT = ("variant_from.{axis}: the file has no column {name!r}; the header found (delimiter "
                           "{delim}) is: {header}")
MSG_VARIANT_FROM_COMBINATION = ("variant_from: the combination {combo} at {rows} is no variant of the spec's "
                                "table; variants: {allowed}")
MSG_DECIMAL_DELIMITER = "decimal: the decimal mark {decimal!r} is the file's delimiter; a decimal comma needs delimiter ';', tab or '|'"
MSG_TRAILING = ("every line of the file ends with the delimiter {delim!r} (an empty last column); "
                "that column is left out")
MSG_RAGGED = "{rows} {have} {n} field(s), the header has {m} ({header}); {left} left out"
#: Most lines printed per kind of problem; the rest are counted (issue 37 §2).
MAX_PER_KIND = 20
MSG_NO_MATCH_COLUMN = ("no is_true_match column: the merit metrics (recall@K, nDCG@K, equal opportunity) "
                       "will be N/A for all {n} rows ({rows}); add the column (1 = the candidate matches "
                       "the job) to audit them")


@dataclass
class ScoreFile:
    """What :func:`read_score_file` found.

    Attributes
    ----------
    problems : list of str
        One message per problem, each naming the CSV lines; empty when the file can be used.
    warnings : list of str
        Legal but probably unintended content (no ``is_true_match``).
    rows : list of dict
        The usable rows (``job_id, cv_id, variant, score`` (float), ``is_true_match`` (0/1 or None),
        ``line``), when there are no problems; else empty.
    header : list of str
        The header as found.
    delimiter : str
        The delimiter used (declared or sniffed).
    mapping : dict
        Product column -> the file's column, as used (declared, exact names, or guessed).
    base_per_job : dict
        Job id -> number of distinct base candidates (``cv_id``) in the file.
    """

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    delimiter: str = ","
    mapping: dict[str, str] = field(default_factory=dict)
    base_per_job: dict[str, int] = field(default_factory=dict)
    #: Index in ``problems`` -> the key under the system it concerns (``("values", "Persona")``); a problem
    #: not listed concerns the file (``path``).
    where: dict[int, tuple] = field(default_factory=dict)
    #: What a reader needs to replay the reading (:meth:`FileMapping.record`, the trailing delimiter).
    read_as: dict[str, Any] = field(default_factory=dict)
    #: A guessed ``variant_from`` (axis -> column) offered when the variant is in several columns.
    guessed_variant_from: dict[str, str] = field(default_factory=dict)

    def add(self, message: str, where: tuple | None = None) -> None:
        """One problem, located at ``where`` under the system when given."""
        if where is not None:
            self.where[len(self.problems)] = where
        self.problems.append(message)


@dataclass(frozen=True)
class FileMapping:
    """How a vendor's export is read as it came (issue 37 §1): the mapping keys of a ``precomputed``
    system besides ``columns`` and ``delimiter``. The file itself is never changed; its digest is the
    digest of the file as received.

    Attributes
    ----------
    ignore_columns : tuple of str
        File columns read and skipped (they still count in the file's digest).
    values : mapping
        File column -> {file value: spec id or axis level}.
    case_insensitive : bool
        Values that differ from a spec id (or a key of ``values``) by case only match it.
    variant_from : mapping
        Axis -> file column: the variant is the row of the spec's variant table with those levels
        (replaces ``columns.variant``).
    decimal, thousands : str
        The decimal mark (``.`` or ``,``) and the thousands separator ('' = none) of the scores.
    """

    ignore_columns: tuple[str, ...] = ()
    values: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    case_insensitive: bool = False
    variant_from: Mapping[str, str] = field(default_factory=dict)
    decimal: str = "."
    thousands: str = ""

    @classmethod
    def of(cls, source: Any) -> "FileMapping":
        """From a ``precomputed`` system: its spec model or its resolved block (a dict)."""
        get = source.get if isinstance(source, Mapping) else (lambda k: getattr(source, k, None))
        return cls(ignore_columns=tuple(get("ignore_columns") or ()), values=dict(get("values") or {}),
                   case_insensitive=bool(get("case_insensitive")), variant_from=dict(get("variant_from") or {}),
                   decimal=get("decimal") or ".", thousands=get("thousands") or "")

    def record(self) -> dict[str, Any]:
        """What the run records and the report lists (only what is set), so that a reader can replay it."""
        out: dict[str, Any] = {}
        if self.ignore_columns:
            out["ignore_columns"] = list(self.ignore_columns)
        if self.values:
            out["values"] = {c: dict(m) for c, m in self.values.items()}
        if self.case_insensitive:
            out["case_insensitive"] = True
        if self.variant_from:
            out["variant_from"] = dict(self.variant_from)
        if self.decimal != ".":
            out["decimal"] = self.decimal
        if self.thousands:
            out["thousands"] = self.thousands
        return out


def mapping_text(record: Mapping[str, Any]) -> str:
    """One line of a :meth:`FileMapping.record` (and the column mapping, the trailing delimiter) for the
    compile summary and the report: ``ignored 'Model Version'; values Persona: 'White Male' → WHITE_M, …``."""
    parts = []
    if record.get("columns"):
        parts.append("columns " + ", ".join(f"{p} ← {n!r}" for p, n in record["columns"].items() if p != n))
    if record.get("variant_from"):
        parts.append("variant from " + ", ".join(f"{a} ← {c!r}" for a, c in record["variant_from"].items()))
    if record.get("ignore_columns"):
        parts.append("ignored column(s) " + ", ".join(repr(c) for c in record["ignore_columns"]))
    for col, m in (record.get("values") or {}).items():
        parts.append(f"values of {col!r}: " + ", ".join(f"{k!r} → {v}" for k, v in m.items()))
    if record.get("case_insensitive"):
        parts.append("ids matched case-insensitively")
    if record.get("decimal"):
        parts.append(f"decimal mark {record['decimal']!r}")
    if record.get("thousands"):
        parts.append(f"thousands separator {record['thousands']!r}")
    if record.get("trailing_delimiter"):
        parts.append("a trailing delimiter on every line (empty last column left out)")
    return "; ".join(p for p in parts if p)


def _plain(value: str) -> str:
    """A value as a message shows it outside quotes: as written when printable on one line, else its
    escaped ``repr`` (issue 37 §2: a header or an id holding a line break kept every later line of the
    message from naming its location)."""
    from compiler.text import terminal_safe

    safe = terminal_safe(value)
    return value if safe == value else terminal_safe(repr(value))


def sniff_delimiter(sample: str) -> str:
    """The delimiter of a CSV sample: :class:`csv.Sniffer` restricted to :data:`DELIMITERS`, else the
    candidate that splits the header line into the most fields (a one-column file: comma)."""
    try:
        return csv.Sniffer().sniff(sample, delimiters="".join(DELIMITERS)).delimiter
    except csv.Error:
        first = next((ln for ln in sample.splitlines() if ln.strip()), "")
        return max(DELIMITERS, key=lambda d: (first.count(d), d == ","))


class CellError(ValueError):
    """A CSV cell (or header name) holds a character :func:`compiler.text.forbidden_char` forbids (issue 41)."""


def read_csv_records(path: Path, delimiter: str | None = None, *, ragged: list[tuple[int, int]] | None = None,
                     trailing: list[bool] | None = None) -> tuple[list[str], list[list[str]], list[int], str]:
    """Header, records, each record's first line number (header = line 1) and the delimiter.

    Read with the csv module so that blank lines and quoted fields spanning several lines count as
    they do in an editor (``csv.reader.line_num``). Blank lines are skipped. ``delimiter`` None:
    sniffed (:func:`sniff_delimiter`). Only a regular file of at most :data:`MAX_CSV_BYTES` is read
    (:func:`compiler.files.read_regular`; issue 41). The file is read once into memory and never
    written, copied or re-encoded.

    Parameters
    ----------
    ragged : list, optional
        When given, a record whose field count differs from the header's is appended to it as
        ``(line, fields)`` and left out (issue 37 §2: one located problem among the others); when None,
        it raises ``ValueError``.
    trailing : list, optional
        When given and every line ends with a delimiter (an empty last header field, every record's
        last field empty), that last column is dropped and ``True`` is appended to it (issue 37 §1).

    Raises
    ------
    CellError
        A header name or cell holding a control character, a non-character or a bidi override, naming
        its line and column, the cell escaped for a terminal.
    ValueError
        A record whose field count differs from the header's (naming the line), when ``ragged`` is None.
    OSError, UnicodeDecodeError
        The file cannot be read as UTF-8 text; :class:`compiler.files.FileProblem` (an ``OSError``)
        when it is not a regular file, a symlink loop, or larger than :data:`MAX_CSV_BYTES`.
    """
    from compiler.files import read_regular
    from compiler.text import describe, first_forbidden, terminal_safe

    text = read_regular(path, cap=MAX_CSV_BYTES, shown=str(path)).decode("utf-8")
    text = text.removeprefix("\ufeff")
    if delimiter is None:
        delimiter = sniff_delimiter(text[:64 * 1024])
    suspect = first_forbidden(text) is not None  # cells are searched one by one only then
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header: list[str] | None = None
    records, lines = [], []
    end = 0  # the line the previous record ended on: a quoted field with line breaks spans several
    while True:
        start = end + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        end = reader.line_num
        if suspect:
            for j, cell in enumerate(row):
                if (bad := first_forbidden(cell)) is not None:
                    column = (header[j] if header is not None and j < len(header) else f"#{j + 1}")
                    raise CellError(MSG_CELL_CHAR.format(line=start, column=terminal_safe(repr(column)),
                                                         cell=terminal_safe(repr(cell[:80])),
                                                         code=describe(cell[bad])))
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if header is None:
            header = [c.strip() for c in row]
            continue
        if len(row) != len(header):
            if ragged is None:
                raise ValueError(MSG_FIELDS.format(line=start, n=len(row), m=len(header), header=", ".join(header)))
            ragged.append((start, len(row)))
            continue
        records.append(row)
        lines.append(start)
    if trailing is not None and header and len(header) > 1 and header[-1] == "" \
            and all(not r[-1].strip() for r in records):
        header = header[:-1]
        records = [r[:-1] for r in records]
        trailing.append(True)
    return header or [], records, lines, delimiter


def lines_text(lines: Sequence[int], limit: int = 8) -> str:
    """``line 5`` / ``lines 5, 9, 12 (and 3 more)``."""
    shown = ", ".join(str(x) for x in lines[:limit])
    more = f" (and {len(lines) - limit} more)" if len(lines) > limit else ""
    return f"line{'s' if len(lines) > 1 else ''} {shown}{more}"


def missing_cells(bases: Sequence[tuple[str, str]], variants: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """:data:`MSG_MISSING_CELLS` for the (job, base candidate, variant) cells of ``bases`` x ``variants``
    that no row holds; '' when none is missing."""
    have = {(r["job_id"], r["cv_id"], r["variant"]) for r in rows}
    gaps = [(j, c, v) for j, c in bases for v in variants if (j, c, v) not in have]
    if not gaps:
        return ""
    return MSG_MISSING_CELLS.format(n=len(gaps), examples="; ".join(f"({_plain(j)}, {_plain(c)}, {_plain(v)})" for j, c, v in gaps[:5]))


def values_text(values: Iterable[Any], limit: int = 5) -> str:
    """The distinct values, quoted, at most ``limit`` of them (``'a', 'b' ...``)."""
    vals = list(dict.fromkeys(str(v) for v in values))
    return ", ".join(_quote(v) for v in vals[:limit]) + (" ..." if len(vals) > limit else "")


def closest(value: str, allowed: Sequence[str]) -> list[str]:
    """The allowed ids closest to ``value`` (issue 37 §3), every one at the best level named:

    1. ids equal to it but for case;
    2. ids of which it spells out every part: the same parts (split at ``_ - . space``), each equal or a
       part of the id that the value's part (three letters or more) starts with (``BLACK_FEMALE`` and
       ``Black Female`` -> ``BLACK_F``);
    3. the ids most similar to it case-insensitively by :class:`difflib.SequenceMatcher`'s ratio, when at
       least 0.75 (``WHITE_FM`` -> ``WHITE_F`` and ``WHITE_M``, equally close).
    """
    allowed = list(dict.fromkeys(allowed))
    low = value.casefold()
    hits = [a for a in allowed if a.casefold() == low]
    if hits:
        return hits
    parts = [p for p in re.split(r"[_\-.\s]+", low) if p]

    def spells(a: str) -> bool:
        ap = [p for p in re.split(r"[_\-.\s]+", a.casefold()) if p]
        return len(ap) == len(parts) and ap != parts and all(
            v == x or (len(v) >= 3 and v.startswith(x)) for v, x in zip(parts, ap))

    hits = [a for a in allowed if spells(a)]
    if hits:
        return hits
    ratios = {a: difflib.SequenceMatcher(None, low, a.casefold()).ratio() for a in allowed}
    best = max(ratios.values(), default=0.0)
    return [a for a in allowed if ratios[a] == best] if best >= 0.75 else []


def hint(value: str, allowed: Sequence[str]) -> str:
    """``'x' (did you mean 'y'?)``, ``'x' (did you mean 'y' or 'z'?)`` or ``'x'``; an empty value reads ``''``."""
    found = closest(value, allowed) if value else []
    if not found:
        return _quote(value)
    names = [repr(a) for a in found]
    said = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f"{_quote(value)} (did you mean {said}?)"


def _quote(value: str) -> str:
    from compiler.text import terminal_safe

    return terminal_safe(repr(value))


def _with_hint(values: Sequence[str], allowed: Sequence[str]) -> str:
    """Unknown values, each with the closest allowed ones (:func:`closest`)."""
    out = [hint(v, allowed) for v in list(dict.fromkeys(values))[:5]]
    return ", ".join(out) + (" ..." if len(set(values)) > 5 else "")


def parse_bool(cell: str) -> int | None:
    """1 / 0 for ``1/0``, ``true/false``, ``yes/no`` (any case, spaces stripped); None otherwise."""
    c = cell.strip().lower()
    return 1 if c in TRUE_WORDS else 0 if c in FALSE_WORDS else None


def parse_number(cell: str, decimal: str = ".", thousands: str = "") -> float | None:
    """A score cell as a float when it is a finite number written as :data:`NUMBER` (surrounding
    ASCII spaces and tabs ignored); None otherwise (``4_5``, ``٤٥``, ``４５``, ``nan``, ``inf``, ``1e999``,
    ``.5``, and a number beside a no-break or other Unicode space).

    ``decimal`` ``","`` reads ``6,4`` as 6.4 (and then ``6.4`` is not a number); ``thousands`` (issue 37
    §1) is accepted only between groups of three digits (``1.234,5``; ``12.34,5`` is not a number).
    Python's ``float`` alone would accept digit grouping and every Unicode decimal digit (issue 41); the
    pattern decides what is a number, ``float`` then only converts it.
    """
    text = cell.strip(" \t")  # str.strip() would also drop U+00A0 and every Unicode space
    if decimal == "." and not thousands:
        if not NUMBER.fullmatch(text):
            return None
    else:
        if not _number_pattern(decimal, thousands).fullmatch(text):
            return None
        text = (text.replace(thousands, "") if thousands else text).replace(decimal, ".")
    x = float(text)
    return x if math.isfinite(x) else None


def _number_pattern(decimal: str, thousands: str) -> re.Pattern:
    """:data:`NUMBER` with another decimal mark and an optional thousands separator."""
    d, t = re.escape(decimal), re.escape(thousands)
    whole = f"(?:[0-9]{{1,3}}(?:{t}[0-9]{{3}})+|[0-9]+)" if thousands else "[0-9]+"
    return re.compile(f"[+-]?{whole}(?:{d}[0-9]+)?(?:[eE][+-]?[0-9]+)?")


#: Score scales of round numbers a vendor export commonly uses (issue 37 §3), tightest first: the hint of an
#: out-of-range error suggests the first that holds every score.
COMMON_SCALES = ((0.0, 1.0), (1.0, 5.0), (0.0, 5.0), (1.0, 7.0), (1.0, 10.0), (0.0, 10.0), (0.0, 100.0))


def likely_scale(values: Sequence[float]) -> tuple[float, float] | None:
    """The tightest of :data:`COMMON_SCALES` holding every value, else None (no value: None)."""
    if not values:
        return None
    lo, hi = min(values), max(values)
    return next(((a, b) for a, b in COMMON_SCALES if a <= lo and hi <= b), None)


def guess_columns(header: Sequence[str], records: Sequence[Sequence[str]], *, jobs: Sequence[str],
                  variants: Sequence[str], skip: Sequence[str] = ()) -> dict[str, str]:
    """Product column -> the file's column, guessed for the product columns the header lacks.

    Exact names first; then ``variant`` and ``job_id`` by content (the column most of whose values
    are the spec's variant / job ids); ``is_true_match`` a column of boolean words only; then the
    rest by name (:data:`NAME_HINTS`); a last single remaining column goes to the last missing
    required column. Returns only the columns it could place; ``skip``: columns not to place (ignored,
    or read by ``variant_from``). ``is_true_match``: a column of boolean words only whose name says so
    (``qualified``, ``Meets Min Quals``, ``meets_requirements``; issue 37 §1).
    """
    out = {c: c for c in COLUMNS if c in header and c not in skip}
    free = [h for h in header if h not in out.values() and h not in skip]
    sample = records[:2000]

    def share(col: str, allowed: set[str]) -> float:
        j = header.index(col)
        vals = [r[j].strip() for r in sample]
        return sum(v in allowed for v in vals) / max(len(vals), 1)

    for product, allowed in (("variant", set(variants)), ("job_id", set(jobs))):
        if product in out or not free or not allowed:
            continue
        best = max(free, key=lambda h: share(h, allowed))
        if share(best, allowed) >= 0.5:
            out[product] = best
            free.remove(best)
    if "is_true_match" not in out:
        for h in free:
            j = header.index(h)
            if sample and all(parse_bool(r[j]) is not None for r in sample) \
                    and any(w in re.sub(r"[^a-z]+", "_", h.lower()) for w in NAME_HINTS["is_true_match"] + ("match",)):
                out["is_true_match"] = h
                free.remove(h)
                break
    for product in ("score", "cv_id", "job_id", "variant"):
        if product in out:
            continue
        hit = next((h for h in free if any(w in re.split(r"[^a-zé]+", h.lower()) or w in h.lower()
                                           for w in NAME_HINTS[product])), None)
        if hit is not None:
            out[product] = hit
            free.remove(hit)
    missing = [c for c in REQUIRED if c not in out]
    if len(missing) == 1 and len(free) == 1:
        out[missing[0]] = free[0]
    return out


def _level_of(value: str, levels: Sequence[str]) -> str | None:
    """The one level a cell names, for guessing only: equal but for case, or one of the cell's words equal
    to it or spelling it out (``Black American`` -> BLACK, ``Female`` -> F); None when none or several."""
    words = [w for w in re.split(r"[_\-.\s]+", value.casefold()) if w]
    hits = [lv for lv in levels if lv.casefold() == value.casefold()
            or any(w == lv.casefold() or (len(w) >= 3 and w.startswith(lv.casefold())) for w in words)]
    return hits[0] if len(hits) == 1 else None


def _values_suggestion(column: str, values: Sequence[str], allowed: Sequence[str], key: str) -> str:
    """``; map them with `values: {Race: {White American: WHITE, …}}` under systems[0]`` when every
    distinct value names one allowed id (:func:`_level_of`); '' otherwise."""
    distinct = list(dict.fromkeys(v for v in values if v))
    if not distinct or len(distinct) > 20:
        return ""
    pairs = {v: _level_of(v, allowed) for v in distinct}
    if any(t is None for t in pairs.values()):
        return ""
    shown = ", ".join(f"{_plain(v)}: {t}" for v, t in pairs.items())
    return f"; map them with `values: {{{_plain(column)}: {{{shown}}}}}` under {key}"


def guess_variant_from(header: Sequence[str], records: Sequence[Sequence[str]], *,
                       table: Mapping[str, Mapping[str, str]], skip: Sequence[str] = ()) -> dict[str, str]:
    """Axis -> file column for an export that writes the variant in several columns (issue 37 §1): per axis
    of the variant table, the column most of whose values are that axis's levels or spell them out
    (:func:`closest`, case-insensitive); every axis needs one, else {}."""
    axes: dict[str, list[str]] = {}
    for levels in table.values():
        for axis, level in levels.items():
            axes.setdefault(axis, [])
            if level not in axes[axis]:
                axes[axis].append(level)
    if len(axes) < 2:
        return {}
    sample = records[:2000]
    out: dict[str, str] = {}
    free = [h for h in header if h not in skip]
    for axis, levels in axes.items():
        def share(col: str) -> float:
            j = header.index(col)
            vals = [r[j].strip() for r in sample]
            return sum(_level_of(v, levels) is not None for v in vals) / max(len(vals), 1)

        best = max((h for h in free if h not in out.values()), key=share, default=None)
        if best is None or share(best) < 0.9:
            return {}
        out[axis] = best
    return out


def _open(path: Path, delimiter: str | None) -> tuple[ScoreFile, list[list[str]] | None, list[int]]:
    """A score file's header (in ``out.header``), records and their lines; records None when the file
    cannot be read or has no header (the problem is in ``out.problems``). A ragged row is a problem among
    the others and is left out (issue 37 §2); a trailing delimiter on every line is dropped with a note."""
    out = ScoreFile()
    from compiler.files import FileProblem

    ragged: list[tuple[int, int]] = []
    trailing: list[bool] = []
    try:
        header, records, lines, out.delimiter = read_csv_records(path, delimiter, ragged=ragged, trailing=trailing)
    except CellError as err:
        out.problems.append(str(err))
        return out, None, []
    except FileProblem as err:  # not a regular file, too large: the caller names the file
        out.problems.append(MSG_READ.format(err=err.reason))
        return out, None, []
    except (OSError, ValueError, csv.Error) as err:
        out.problems.append(MSG_READ.format(err=err))
        return out, None, []
    out.header = header
    if not header:
        out.problems.append(MSG_NO_HEADER)
        return out, None, []
    width = len(header) + (1 if trailing else 0)
    shown = ", ".join(_plain(h) for h in header) + (", ''" if trailing else "")
    for n in sorted({n for _, n in ragged}):
        at = [line for line, k in ragged if k == n]
        out.problems.append(MSG_RAGGED.format(rows=lines_text(at), have="has" if len(at) == 1 else "have", n=n,
                                              m=width, header=shown, left="the row is" if len(at) == 1 else
                                              "the rows are"))
    if trailing:
        out.read_as["trailing_delimiter"] = True
        out.warnings.append(MSG_TRAILING.format(delim=out.delimiter))
    return out, records, lines


def _check_scores(rows: list[dict[str, Any]], score_range: tuple[float, float], out: ScoreFile, report,
                  *, key: str, decimal: str = ".", thousands: str = "") -> None:
    """Empty, non-numeric and out-of-range scores, each reported with its lines (the range error with the
    scale most scores lie on); a readable score is kept in ``row["score_value"]``. A number is read only
    in the strict form :data:`NUMBER` (:func:`parse_number`)."""
    column = out.mapping.get("score", "score")
    empty, nan, scores = [], [], []
    for r in rows:
        if r["score"].lower() in MISSING_WORDS:
            empty.append(r)
        elif (x := parse_number(r["score"], decimal, thousands)) is None:
            nan.append(r)
        else:
            r["score_value"] = x
            scores.append(r)
    report(MSG_SCORE_EMPTY, empty, values=values_text([r["score"] for r in empty]))
    mark = "" if decimal == "." else f" with the decimal mark {decimal!r}"
    report(MSG_SCORE_NAN, nan, values=values_text([r["score"] for r in nan]), column=column, mark=mark)
    if nan and decimal == "." and all(parse_number(r["score"], ",") is not None for r in nan):
        out.problems[-1] += MSG_DECIMAL_COMMA.format(key=key.rsplit(".", 1)[0])
    lo, hi = score_range
    bad = [r for r in scores if not lo <= r["score_value"] <= hi]
    if bad:
        vals = [r["score_value"] for r in scores]
        report(MSG_SCORE_RANGE, bad, lo=lo, hi=hi, values=values_text([r["score"] for r in bad]), smin=min(vals),
               smax=max(vals), key=key)
        scale = likely_scale(vals) if len(bad) > len(scores) / 2 else None
        if scale is not None and scale != (lo, hi):
            out.problems[-1] += (f". Every score lies in [{scale[0]:g}, {scale[1]:g}], the tightest common scale "
                                 f"holding them all: {key}: [{scale[0]:g}, {scale[1]:g}]")


def read_score_file(path: Path, *, jobs: Sequence[str], variants: Sequence[str] | None,
                    score_range: tuple[float, float], columns: Mapping[str, str] | None = None,
                    delimiter: str | None = None, k: Mapping[str, int] | None = None,
                    key: str = "systems[0]", controls: Sequence[str] = (), file_mapping: FileMapping | None = None,
                    table: Mapping[str, Mapping[str, str]] | None = None,
                    positive_controls: Sequence[str] = ()) -> ScoreFile:
    """Read a paired score export as it came and check everything the spec alone allows, in one pass.

    Parameters
    ----------
    path : Path
        The CSV file; read, never modified.
    jobs : sequence of str
        The spec's job ids.
    variants : sequence of str or None
        The spec's variant ids (reference first); None when the spec's variants are themselves
        invalid (the variant column is then not checked against them).
    score_range : (low, high)
        The system's score scale (``systems[].score_range``, default [0, 1]).
    columns : mapping, optional
        ``systems[].columns``: product column -> the file's column.
    delimiter : str, optional
        ``systems[].delimiter``; sniffed when None.
    k : mapping, optional
        ``analysis.k`` (family -> K): a job with fewer base candidates than the largest is a problem.
    key : str
        The system's key path in the spec (``systems[2]``), used in the hints of the messages.
    controls : sequence of str
        The ids of the spec's negative controls (``variants.negative_controls``, issue 38): rows with
        one of them as ``variant`` are placebo rows; every (job_id, cv_id) with a reference row needs
        one per control, and a placebo row needs a reference row. They count in neither ``base_per_job``
        nor the missing-cell check of the variants.
    file_mapping : FileMapping, optional
        ``ignore_columns``, ``values``, ``case_insensitive``, ``variant_from``, ``decimal``, ``thousands``
        (issue 37 §1). A problem of one of these keys is located at it (``ScoreFile.where``).
    table : mapping, optional
        The spec's variant table (variant id -> {axis: level}): ``variant_from`` finds a row's variant in
        it, and an export with the variant in several columns gets a guessed ``variant_from``.

    positive_controls : sequence of str
        The ids of the spec's positive controls (``variants.positive_controls``, issue 39 §6): read and checked
        as ``controls`` are (a row for every (job_id, cv_id) of the reference variant, every missing line named),
        their messages saying "positive control".

    Returns
    -------
    ScoreFile
        Problems (empty when usable), warnings, the rows (placebo rows included, ``variant`` = the
        control id), and what was found (header, delimiter, mapping, base candidates per job, how the
        file was read).
    """
    fm = file_mapping or FileMapping()
    table = dict(table or {})
    negative = tuple(controls)
    controls = (*negative, *positive_controls)
    out, records, lines = _open(path, delimiter)
    if records is None:
        return out
    out.read_as.update(fm.record())
    header = out.header
    delim = f"{DELIMITER_NAMES.get(out.delimiter, repr(out.delimiter))} {out.delimiter!r}"
    found = _plain(out.delimiter.join(header))
    if fm.decimal == out.delimiter and delimiter is None:  # a written delimiter: the spec check says it
        out.add(MSG_DECIMAL_DELIMITER.format(decimal=fm.decimal), ("decimal",))
    mapped_names = set((columns or {}).values()) | set(fm.variant_from.values())
    ignored = []
    for j, name in enumerate(fm.ignore_columns):
        if name not in header:
            out.add(MSG_IGNORED_ABSENT.format(name=name, delim=delim, header=found), ("ignore_columns", j))
        elif name in mapped_names:
            where = ", ".join([f"columns.{p}" for p, n in (columns or {}).items() if n == name]
                              + [f"variant_from.{a}" for a, n in fm.variant_from.items() if n == name])
            out.add(MSG_IGNORED_MAPPED.format(name=name, where=where), ("ignore_columns", j))
        else:
            ignored.append(name)
    variant_from = {}
    for axis, name in fm.variant_from.items():
        if name not in header:
            out.add(MSG_VARIANT_FROM_ABSENT.format(axis=axis, name=name, delim=delim, header=found),
                    ("variant_from", axis))
        else:
            variant_from[axis] = name
    vf_broken = len(variant_from) != len(fm.variant_from)
    required = [c for c in REQUIRED if not (c == "variant" and fm.variant_from)]
    skip = [*ignored, *variant_from.values()]
    if columns:
        mapping = dict(columns)
        for product, name in mapping.items():
            if name not in header:
                out.problems.append(MSG_MAPPED_ABSENT.format(key=f"{key}.columns", column=product, name=name,
                                                             delim=delim, header=found))
        mapping = {p: n for p, n in mapping.items() if n in header}
        for c in COLUMNS:  # product columns the mapping leaves out may keep their own names
            if c not in mapping and c in header and c not in mapping.values() and c not in skip:
                mapping[c] = c
    else:
        mapping = {c: c for c in COLUMNS if c in header and c not in skip}
    if fm.variant_from:
        mapping.pop("variant", None)
    missing = [c for c in required if c not in mapping]
    if missing:
        out.problems.append(MSG_COLUMNS_MISSING.format(missing=", ".join(missing), delim=delim, header=found,
                                                       required=", ".join(REQUIRED)))
        if "variant" not in mapping and not fm.variant_from and table:
            vf = guess_variant_from(header, records, table=table, skip=skip)
            if vf:  # the variant is in several columns (race and sex apart)
                out.guessed_variant_from = variant_from = vf
                required = [c for c in REQUIRED if c != "variant"]
                skip = [*skip, *vf.values()]
        guess = guess_columns(header, records, jobs=jobs, variants=variants or [], skip=skip)
        guess = {**guess, **mapping}
        if out.guessed_variant_from:
            guess.pop("variant", None)
        new = {p: n for p, n in guess.items() if mapping.get(p) != n}
        if new or out.guessed_variant_from:
            pairs = ", ".join([f"{p} ← {_plain(new[p])}" for p in COLUMNS if p in new]
                              + [f"{a} ← {_plain(c)}" for a, c in out.guessed_variant_from.items()])
            shown = ", ".join(f"{p}: {_plain(guess[p])}" for p in COLUMNS if p in guess and guess[p] != p)
            block = (f"`columns: {{{shown}}}`" if shown else "")
            if out.guessed_variant_from:
                vf_shown = ", ".join(f"{a}: {_plain(c)}" for a, c in out.guessed_variant_from.items())
                block += (" and " if block else "") + f"`variant_from: {{{vf_shown}}}`"
            out.problems.append(MSG_SUGGEST.format(pairs=pairs, mapping=block, key=key))
        mapping = guess
        if any(c not in mapping for c in required):
            return out  # the rows cannot be read
    unknown = [h for h in header if h not in mapping.values() and h not in skip]
    if unknown:
        free = [c for c in COLUMNS if c not in mapping]
        out.problems.append(MSG_COLUMNS_UNKNOWN.format(unknown=_with_hint(unknown, free) if free else
                                                       ", ".join(_quote(u) for u in unknown),
                                                       allowed=", ".join(COLUMNS), key=f"{key}.columns",
                                                       ignore=f"{key}.ignore_columns"))
    out.mapping = mapping
    if not records:
        out.problems.append(MSG_NO_ROWS)
        return out
    if vf_broken:
        variant_from = {}
    idx = {p: header.index(n) for p, n in mapping.items()}
    rows = [{p: rec[j].strip() for p, j in idx.items()} | {"line": ln, "raw": {}} for rec, ln in zip(records, lines)]

    def report(msg: str, bad: list[dict[str, Any]], where: tuple | None = None, **kw: Any) -> None:
        if bad:
            out.add(msg.format(rows=lines_text([r["line"] for r in bad]), **kw), where)

    # the values of each read column, mapped to spec ids (issue 37 §1)
    levels: dict[str, list[str]] = {}
    for vs in table.values():
        for axis, level in vs.items():
            levels.setdefault(axis, [])
            if level not in levels[axis]:
                levels[axis].append(level)
    bools = [*TRUE_WORDS, *FALSE_WORDS]
    allowed_of: dict[str, tuple[list[str] | None, str]] = {
        "job_id": (list(jobs), "a job id"), "cv_id": (None, "a base candidate"),
        "variant": ([*(variants or []), *controls] if variants is not None else None, "a variant"),
        "is_true_match": (bools, "a match flag (1/0, true/false, yes/no)")}
    read_by = {n: p for p, n in mapping.items() if p != "score"}
    for axis, n in variant_from.items():
        read_by[n] = f"axis:{axis}"
    for col, vmap in fm.values.items():
        if col not in header:
            out.add(MSG_VALUES_ABSENT.format(name=col, delim=delim, header=found), ("values", col))
            continue
        product = read_by.get(col)
        if product is None:
            out.add(MSG_VALUES_UNUSED.format(name=col), ("values", col))
            continue
        allowed, what = (levels.get(product[5:], []), f"a level of axis {product[5:]!r}") \
            if product.startswith("axis:") else allowed_of[product]
        if allowed is None:
            continue
        folded = {a.casefold() for a in allowed}
        for value, target in vmap.items():
            ok = target in allowed or ((fm.case_insensitive or product == "is_true_match")
                                       and str(target).casefold() in folded)
            if not ok:
                out.add(MSG_VALUES_TARGET.format(column=col, value=value, target=target, what=what,
                                                 allowed=", ".join(allowed)), ("values", col, value))

    def mapper(col: str, allowed: Sequence[str] | None):
        """file value -> spec value (None: unmapped) for column ``col``."""
        vmap = {str(a): str(b) for a, b in (fm.values.get(col) or {}).items()}
        low = {a.casefold(): b for a, b in vmap.items()}
        exact = set(allowed) if allowed is not None else None
        ids = {a.casefold(): a for a in allowed} if allowed is not None and fm.case_insensitive else {}

        def to(v: str) -> str | None:
            if v in vmap:
                return vmap[v]
            if fm.case_insensitive and v.casefold() in low:
                return low[v.casefold()]
            if exact is None or v in exact:
                return v
            if v.casefold() in ids:
                return ids[v.casefold()]
            return None
        return to

    unmapped: set[tuple[int, str]] = set()  # (line, product) whose value a values map could not place
    for product in ("job_id", "cv_id", "variant", "is_true_match"):
        col = mapping.get(product)
        if col is None:
            continue
        allowed, what = allowed_of[product]
        if product == "is_true_match":
            allowed = None  # its words are checked below, case-insensitively
        to = mapper(col, allowed)
        bad = []
        for r in rows:
            v = r[product]
            t = to(v)
            if t is None:
                if col in fm.values and v:
                    bad.append(r)
                    unmapped.add((r["line"], product))
                continue
            if t != v:
                r["raw"][product] = v
                r[product] = t
        if bad:
            vals = [r[product] for r in bad]
            report(MSG_VALUES_UNMAPPED, bad, ("values", col), column=f"values.{col}",
                   values=_with_hint(vals, [*(fm.values.get(col) or {}), *(allowed or [])]),
                   verb="is" if len(set(vals)) == 1 else "are", what=what, allowed=", ".join(allowed or []),
                   suggest=_values_suggestion(col, vals, allowed or [], key))
    if variant_from:
        by_levels: dict[tuple, list[str]] = {}
        axes = list(variant_from)
        for vid, vs in table.items():
            by_levels.setdefault(tuple(vs.get(a) for a in axes), []).append(vid)
        got: dict[str, list[str]] = {}
        for axis, col in variant_from.items():
            j = header.index(col)
            to = mapper(col, levels.get(axis, []))
            vals, bad, vs = [], [], []
            for r, rec in zip(rows, records):
                v = rec[j].strip()
                t = to(v)
                if t is None:
                    bad.append(r)
                    vs.append(v)
                vals.append(t)
            got[axis] = vals
            if bad:
                where = ("values", col) if col in fm.values else ("variant_from", axis)
                report(MSG_VALUES_UNMAPPED, bad, where, column=f"values.{col}" if col in fm.values else
                       f"column {_quote(col)} (variant_from.{axis})",
                       values=_with_hint(vs, [*(fm.values.get(col) or {}), *levels.get(axis, [])]),
                       verb="is" if len(set(vs)) == 1 else "are", what=f"a level of axis {axis!r}",
                       allowed=", ".join(levels.get(axis, [])),
                       suggest=_values_suggestion(col, vs, levels.get(axis, []), key))
        combos: dict[tuple, list[dict[str, Any]]] = {}
        for n, r in enumerate(rows):
            r["variant"], r["no_variant"] = "", True  # until its levels name one variant of the table
            combo = tuple(got[a][n] for a in axes)
            if None in combo:
                continue
            hit = by_levels.get(combo, [])
            if len(hit) == 1:
                r["variant"] = hit[0]
                r["no_variant"] = False
                for a in axes:
                    r["raw"][f"axis:{a}"] = records[n][header.index(variant_from[a])].strip()
            else:
                combos.setdefault(combo, []).append(r)
        for combo, bad in combos.items():
            report(MSG_VARIANT_FROM_COMBINATION, bad, ("variant_from",),
                   combo=", ".join(f"{a}={_quote(v)}" for a, v in zip(axes, combo)), allowed=", ".join(table))
        out.mapping = {**mapping, "variant": "variant_from(" + ", ".join(variant_from.values()) + ")"}
    for col in ("job_id", "cv_id", "variant"):
        report(MSG_EMPTY_KEY, [r for r in rows if r[col] == "" and not r.get("no_variant")], column=col)
    job_set = set(jobs)
    bad = [r for r in rows if r["job_id"] and r["job_id"] not in job_set and (r["line"], "job_id") not in unmapped]
    folded = {j.casefold() for j in jobs}
    case_only = bool(bad) and not fm.case_insensitive and all(r["job_id"].casefold() in folded for r in bad)
    report(MSG_UNKNOWN_JOB, bad, values=_with_hint([r["job_id"] for r in bad], jobs),
           allowed=", ".join(jobs) + (MSG_CASE_ONLY.format(key=key) if case_only else ""))
    var_set, control_set = set(variants or ()), set(controls)
    if variants is not None:
        bad = [r for r in rows if r["variant"] and r["variant"] not in var_set | control_set
               and (r["line"], "variant") not in unmapped]
        allowed = [*variants, *controls]
        report(MSG_UNKNOWN_VARIANT, bad, values=_with_hint([r["variant"] for r in bad], allowed),
               allowed=", ".join(variants) + (f" (negative controls: {', '.join(negative)})" if negative else "")
               + (f" (positive controls: {', '.join(positive_controls)})" if positive_controls else ""))
    seen_jobs = {r["job_id"] for r in rows}
    absent = [j for j in jobs if j not in seen_jobs]
    if absent:
        out.problems.append(MSG_JOB_ABSENT.format(jobs=", ".join(absent)))
    _check_scores(rows, score_range, out, report, key=f"{key}.score_range", decimal=fm.decimal,
                  thousands=fm.thousands)
    cells: dict[tuple[str, str, str], int] = {}
    dup = []
    for r in rows:
        cell = (r["job_id"], r["cv_id"], r["variant"])
        if r.get("no_variant"):
            continue
        if cell in cells:
            dup.append(r)
        cells.setdefault(cell, r["line"])
    if dup:
        first = {(r["job_id"], r["cv_id"], r["variant"]) for r in dup}
        group = sorted([r for r in rows if (r["job_id"], r["cv_id"], r["variant"]) in first], key=lambda r: r["line"])
        collide: dict[str, list[dict[str, Any]]] = {}
        plain_dup = []
        for r in group:
            cell = (r["job_id"], r["cv_id"], r["variant"])
            mates = [m for m in group if (m["job_id"], m["cv_id"], m["variant"]) == cell]
            keys = ["job_id", "cv_id", *([f"axis:{a}" for a in variant_from] if variant_from else ["variant"])]
            differ = [p for p in keys if len({m["raw"].get(p, m.get(p)) for m in mates}) > 1]
            if differ:
                collide.setdefault(differ[0], []).append(r)
            else:
                plain_dup.append(r)
        report(MSG_DUPLICATE, plain_dup)
        for product, bad in collide.items():
            col = variant_from[product[5:]] if product.startswith("axis:") else mapping.get(product)
            pairs = ", ".join(f"{_quote(v)} (line {ln})" for v, ln in dict.fromkeys(
                (r["raw"].get(product, r.get(product)), r["line"]) for r in bad))
            where = ("values", col) if col in fm.values else ("variant_from", product[5:]) \
                if product.startswith("axis:") else None
            report(MSG_VALUES_COLLIDE, bad, where, column=col, pairs=pairs,
                   product="variant" if product.startswith("axis:") else product)
    valid = [r for r in rows if r["job_id"] in job_set and r["cv_id"]
             and (variants is None or r["variant"] in var_set)]
    bases: dict[str, dict[str, None]] = {}
    for r in valid:
        bases.setdefault(r["job_id"], {}).setdefault(r["cv_id"], None)
    out.base_per_job = {j: len(bases.get(j, {})) for j in jobs if j in bases}
    if variants is not None:
        gap = missing_cells([(j, c) for j in jobs for c in bases.get(j, {})], variants, valid)
        if gap:
            out.problems.append(gap)
        if controls and variants:
            _check_controls(rows, reference=variants[0], controls=negative, report=report, kind="negative")
            _check_controls(rows, reference=variants[0], controls=tuple(positive_controls), report=report,
                            kind="positive")
    if k:
        family, kk = max(k.items(), key=lambda kv: kv[1])
        for j, n in out.base_per_job.items():
            if n < kk:
                out.problems.append(MSG_K_TOO_SMALL.format(job=j, n=n, family=family, k=kk))
    if "is_true_match" in mapping:
        bad = []
        for r in rows:
            r["match"] = parse_bool(r["is_true_match"])
            if r["match"] is None:
                bad.append(r)
        report(MSG_MATCH_VALUES, bad, values=values_text([r["is_true_match"] for r in bad]))
        flags: dict[tuple[str, str], set] = {}
        for r in rows:
            if r["match"] is not None:
                flags.setdefault((r["job_id"], r["cv_id"]), set()).add(r["match"])
        mixed = {kk2 for kk2, v in flags.items() if len(v) > 1}
        report(MSG_MATCH_INCONSISTENT, [r for r in rows if (r["job_id"], r["cv_id"]) in mixed])
    elif rows:
        all_lines = [r["line"] for r in rows]
        span = f"lines {all_lines[0]}–{all_lines[-1]}" if len(all_lines) > 1 else f"line {all_lines[0]}"
        out.warnings.append(MSG_NO_MATCH_COLUMN.format(n=len(rows), rows=span))
    if not out.problems:
        out.rows = [{"job_id": r["job_id"], "cv_id": r["cv_id"], "variant": r["variant"], "score": r["score_value"],
                     "is_true_match": r.get("match"), "line": r["line"]} for r in rows]
    return out


def _check_controls(rows: list[dict[str, Any]], *, reference: str, controls: Sequence[str], report,
                    kind: str = "negative") -> None:
    """Control rows pair with reference rows (issue 38 §1; positive controls, issue 39 §6): per control, the
    reference rows whose (job_id, cv_id) has no row of it, then the control rows whose (job_id, cv_id) has no
    reference row. ``kind``: ``negative`` or ``positive``, as the messages name the control."""
    if not controls:
        return
    ref = {(r["job_id"], r["cv_id"]): r for r in rows if r["variant"] == reference}
    for control in controls:
        have = {(r["job_id"], r["cv_id"]) for r in rows if r["variant"] == control}
        report(MSG_CONTROL_MISSING, [r for cell, r in ref.items() if cell not in have], control=control, kind=kind)
    control_set = set(controls)
    report(MSG_CONTROL_ORPHAN, [r for r in rows if r["variant"] in control_set
                                and (r["job_id"], r["cv_id"]) not in ref], reference=reference, kind=kind)


#: Columns of a blind score file (``systems[].blind``, ``audit export --for-vendor``).
BLIND_COLUMNS = ("resume_id", "score")
MSG_BLIND_COLUMNS_MISSING = ("missing column(s) {missing}; the header found (delimiter {delim}) is: {header}; "
                             "a blind score file has the columns resume_id, score (the ids of the exported "
                             "resumes.csv)")
MSG_BLIND_UNKNOWN_COLUMNS = ("unknown column(s) {unknown}; a blind score file has only resume_id and score "
                             "(the tool knows the rest from its key)")
MSG_BLIND_UNKNOWN_ID = ("resume_id {values} at {rows} are not ids of the export (audit export --for-vendor "
                        "of this lock); was the file scored from another export?")
MSG_BLIND_DUPLICATE = "resume_id scored twice at {rows}"
MSG_BLIND_MISSING = "{n} exported résumé(s) have no score, e.g. resume_id {examples}; the vendor must score every row"


def read_blind_scores(path: Path, *, key: Mapping[str, tuple[str, str, str]], score_range: tuple[float, float],
                      columns: Mapping[str, str] | None = None, delimiter: str | None = None) -> ScoreFile:
    """Read a vendor's scores of the résumés of ``audit export --for-vendor`` back through the key.

    Parameters
    ----------
    path : Path
        The returned CSV: ``resume_id, score`` (``columns`` may rename ``score``), one row per exported
        résumé, in any order.
    key : mapping
        Opaque ``resume_id`` -> ``(job_id, cv_id, variant)`` (the export's key, kept by the auditor).
    score_range : (low, high)
        The system's score scale.
    columns, delimiter
        As :func:`read_score_file`.

    Returns
    -------
    ScoreFile
        Problems (each naming CSV lines: unknown, duplicate or missing ids, empty, non-numeric or
        out-of-range scores), and when there are none the rows in the product's form (``job_id, cv_id,
        variant, score, is_true_match`` None, ``line``), so that the adapter treats them as any score file.
    """
    out, records, lines = _open(path, delimiter)
    if records is None:
        return out
    header = out.header
    mapping = {"resume_id": "resume_id", "score": (columns or {}).get("score", "score")}
    missing = [p for p, n in mapping.items() if n not in header]
    if missing:
        delim = f"{DELIMITER_NAMES.get(out.delimiter, repr(out.delimiter))} {out.delimiter!r}"
        out.problems.append(MSG_BLIND_COLUMNS_MISSING.format(missing=", ".join(missing), delim=delim,
                                                             header=out.delimiter.join(header)))
        return out
    unknown = [h for h in header if h not in mapping.values()]
    if unknown:
        out.problems.append(MSG_BLIND_UNKNOWN_COLUMNS.format(unknown=", ".join(repr(u) for u in unknown)))
    out.mapping = mapping
    idx = {p: header.index(n) for p, n in mapping.items()}
    rows = [{p: rec[j].strip() for p, j in idx.items()} | {"line": ln} for rec, ln in zip(records, lines)]

    def report(msg: str, bad: list[dict[str, Any]], **kw: Any) -> None:
        if bad:
            out.problems.append(msg.format(rows=lines_text([r["line"] for r in bad]), **kw))

    bad = [r for r in rows if r["resume_id"] not in key]
    report(MSG_BLIND_UNKNOWN_ID, bad, values=values_text([r["resume_id"] or "empty" for r in bad]))
    seen: dict[str, int] = {}
    dup = []
    for r in rows:
        if r["resume_id"] in seen:
            dup.append(r)
        seen.setdefault(r["resume_id"], r["line"])
    twice = {r["resume_id"] for r in dup}
    report(MSG_BLIND_DUPLICATE, [r for r in rows if r["resume_id"] in twice])
    absent = [rid for rid in key if rid not in seen]
    if absent:
        out.problems.append(MSG_BLIND_MISSING.format(n=len(absent), examples=values_text(absent)))
    _check_scores(rows, score_range, out, report, key="systems[].score_range")
    if not out.problems:
        out.rows = [{"job_id": key[r["resume_id"]][0], "cv_id": key[r["resume_id"]][1],
                     "variant": key[r["resume_id"]][2], "score": r["score_value"], "is_true_match": None,
                     "line": r["line"]} for r in rows]
        bases: dict[str, set] = {}
        for r in out.rows:
            bases.setdefault(r["job_id"], set()).add(r["cv_id"])
        out.base_per_job = {j: len(c) for j, c in bases.items()}
    return out
