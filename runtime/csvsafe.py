"""CSV cells made safe for spreadsheets: one rule for every CSV a run or an export writes (issue 41).

A vendor's ``cv_id`` such as ``=HYPERLINK("http://example.invalid/x","click")`` or ``@SUM(1+1)``
would run as a formula when an auditor opens ``paired.csv`` in a spreadsheet; the vendor is the
party audited, so its file is hostile by design. OWASP's rule for CSV injection
(https://owasp.org/www-community/attacks/CSV_Injection): a cell that begins with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return gets a leading single quote ``'``, which spreadsheets read
as "this cell is text".

What is changed, and what is not:

- only **text** cells (values of type ``str`` in object, string or categorical columns) and the
  column names; numeric, boolean and date columns are written as pandas writes them, so ``-0.5`` in a
  score column stays ``-0.5``;
- a text cell that reads as a number (:data:`NUMBER`, e.g. ``"-5"`` or ``"+1.5e-3"``) keeps its form:
  a spreadsheet reads it as that number, never as a formula;
- any other text cell that begins with a trigger character gets the quote: ``-5 years`` is written
  ``'-5 years`` (a spreadsheet would read ``-5 years`` as a broken formula);
- a text cell that already begins with ``'`` gets one more, so that the rule can be undone exactly
  (:func:`restore`: drop one leading ``'`` of a text cell that has one) and two different values never
  become the same cell.

Quotes and delimiters inside a cell are quoted by the CSV writer (RFC 4180), as before.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

#: The characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection).
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
#: A number as the tool reads one (``[+-]digits[.digits][e[+-]digits]``, ASCII digits only; issue 41).
NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
QUOTE = "'"


def neutralise(value: Any) -> Any:
    """One cell made safe for a spreadsheet (see the module docstring); a non-text value unchanged.

    Parameters
    ----------
    value
        A cell. Only ``str`` values can change.

    Returns
    -------
    Any
        ``"'" + value`` when ``value`` begins with one of :data:`TRIGGERS` and is not a number
        (:data:`NUMBER`), or begins with ``'``; else ``value`` itself.
    """
    if not isinstance(value, str) or not value:
        return value
    if value[0] == QUOTE or (value[0] in TRIGGERS and not NUMBER.fullmatch(value)):
        return QUOTE + value
    return value


def restore(value: Any) -> Any:
    """The inverse of :func:`neutralise` for a cell read back from a CSV the tool wrote: one leading
    ``'`` dropped from a text cell; anything else unchanged."""
    return value[1:] if isinstance(value, str) and value.startswith(QUOTE) else value


def _texty(col: pd.Series) -> bool:
    return (pd.api.types.is_object_dtype(col.dtype) or pd.api.types.is_string_dtype(col.dtype)
            or isinstance(col.dtype, pd.CategoricalDtype))


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell and column name passed through :func:`neutralise` (a copy when
    anything changes; ``frame`` itself otherwise). Numeric, boolean and date columns are untouched."""
    out = frame
    columns = [neutralise(c) for c in frame.columns]
    if columns != list(frame.columns):
        out = frame.copy()
        out.columns = columns
    for i, name in enumerate(frame.columns):
        col = frame.iloc[:, i]
        if not _texty(col):
            continue
        values = col.tolist()
        fixed = [neutralise(v) for v in values]
        if any(a is not b for a, b in zip(values, fixed)):
            if out is frame:
                out = frame.copy()
            out.isetitem(i, pd.Series(fixed, index=col.index, dtype=object))
    return out


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """``frame`` as UTF-8 CSV bytes (no index), every cell safe for a spreadsheet (:func:`safe_frame`).

    The one writer of every CSV a run or an export writes (``paired.csv``, ``metrics.csv``,
    ``resumes.csv`` of ``audit export``...); ``reports/README.md`` describes the rule.
    """
    return safe_frame(frame).to_csv(index=False).encode("utf-8")
