"""Number formatting for the audit report (pure functions, no I/O).

Conventions (seed 000 §3.8, the report brief):

- metric values and interval bounds: 4 significant digits (``0.007400``, ``0.8333``), trailing zeros
  kept so columns line up; signed where the metric is signed (score delta);
- p-values: 3 significant digits, scientific below 0.001 (``7.96×10⁻⁵``);
- counts: integers with thousands separators;
- anything missing (``None``, ``NaN``, unparsable): an em dash.

Minus signs are the typographic minus (U+2212) and exponents use superscript digits, so the
text reads the same in the HTML and the PDF without MathML or web fonts.
"""

from __future__ import annotations

import math
from typing import Any

#: Shown for a missing value.
MISSING = "—"
MINUS = "−"
#: Metric values below this magnitude are floating-point residue (``2.8e-17`` from ``0.84 - 0.84``)
#: on scales of order one, and are shown as zero. p-values are not affected.
ZERO_BELOW = 1e-12
_SUPERSCRIPT = str.maketrans("0123456789-+", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺")


def to_float(x: Any) -> float:
    """Return ``x`` as a float, or NaN when it is missing or not a number."""
    if x is None or isinstance(x, bool):
        return math.nan
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def is_missing(x: Any) -> bool:
    """True when ``x`` is None, NaN, infinite or not a number."""
    return not math.isfinite(to_float(x))


def _sci(mantissa_exp: str) -> str:
    """Turn ``'7.96e-05'`` into ``'7.96×10⁻⁵'``."""
    mant, exp = mantissa_exp.lower().split("e")
    e = int(exp)
    return f"{mant.replace('-', MINUS)}×10{str(e).translate(_SUPERSCRIPT)}"


def fmt_sig(x: Any, digits: int = 4, *, signed: bool = False) -> str:
    """Format with ``digits`` significant digits; scientific outside [1e-4, 1e6).

    >>> fmt_sig(0.0074)
    '0.007400'
    >>> fmt_sig(1)
    '1.000'
    >>> fmt_sig(-0.0123, signed=True)
    '−0.01230'
    """
    v = to_float(x)
    if not math.isfinite(v):
        return MISSING
    if abs(v) < ZERO_BELOW:
        return f"{0.0:.{digits - 1}f}"
    a = abs(v)
    if a < 1e-4 or a >= 1e6:
        s = _sci(f"{a:.{digits - 1}e}")
    elif a >= 10**digits:
        s = f"{a:,.0f}"
    else:
        s = f"{a:#.{digits}g}"
        if "e" in s:  # rounded up to 10**digits
            s = f"{a:,.0f}"
        if s.endswith("."):
            s = s[:-1]
    if v < 0:
        return MINUS + s
    return ("+" + s) if signed else s


def fmt_p(x: Any) -> str:
    """Format a p-value: 3 significant digits, scientific below 0.001.

    >>> fmt_p(7.96e-5)
    '7.96×10⁻⁵'
    >>> fmt_p(0.0032)
    '0.0032'
    """
    v = to_float(x)
    if not math.isfinite(v):
        return MISSING
    if v == 0:
        return "0"
    if v < 1e-3:
        return _sci(f"{v:.2e}")
    return f"{v:.3g}"


def fmt_int(x: Any) -> str:
    """Format a count with thousands separators (``1,000``)."""
    v = to_float(x)
    if not math.isfinite(v):
        return MISSING
    return f"{int(round(v)):,}"


def fmt_num(x: Any, digits: int = 4) -> str:
    """Format an integer-valued number as an integer, anything else with ``digits`` significant digits."""
    v = to_float(x)
    if not math.isfinite(v):
        return MISSING
    if v == int(v) and abs(v) < 1e15:
        return fmt_int(v)
    return fmt_sig(v, digits)


def fmt_ci(lo: Any, hi: Any, digits: int = 4, *, signed: bool = False) -> str:
    """Format a confidence interval as ``[lo, hi]``; an em dash when either bound is missing."""
    if is_missing(lo) or is_missing(hi):
        return MISSING
    return f"[{fmt_sig(lo, digits, signed=signed)}, {fmt_sig(hi, digits, signed=signed)}]"


def fmt_threshold(x: Any) -> str:
    """Format a threshold as written in a spec (``0.02``, ``0.8``), without padding zeros."""
    v = to_float(x)
    if not math.isfinite(v):
        return MISSING
    return f"{v:.6g}".replace("-", MINUS)


def fmt_bound(x: Any) -> str:
    """Format a bound an interval can cross: a threshold as written in a spec (:func:`fmt_threshold`), or one
    derived from it without a short decimal form (the selection ratio's upper bound 1/0.7) at 3 significant
    digits, as the tier table and the chart print it.

    >>> fmt_bound(0.8), fmt_bound(1.25), fmt_bound(1 / 0.7)
    ('0.8', '1.25', '1.43')
    """
    v = to_float(x)
    if math.isfinite(v) and v != 0 and float(f"{v:.3e}") != v:  # more than 4 significant digits: derived
        return fmt_sig(v, 3)
    return fmt_threshold(v)


def fmt_seconds(x: Any) -> str:
    """Format a duration: ``0.42 s``, ``12.3 s``, ``3 min 05 s``."""
    v = to_float(x)
    if not math.isfinite(v):
        return MISSING
    if v < 60:
        return f"{v:.3g} s"
    m, s = divmod(int(round(v)), 60)
    if m < 60:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min {s:02d} s"


def fmt_text(x: Any, default: str = MISSING) -> str:
    """A text cell: ``default`` for None, NaN, infinities and blank strings."""
    if x is None:
        return default
    if isinstance(x, float) and not math.isfinite(x):
        return default
    s = str(x)
    return s if s.strip() else default


def fmt_compact(v: Any) -> str:
    """A nested mapping or list on one line (``key: value, key: value``)."""
    from collections.abc import Mapping

    if isinstance(v, Mapping):
        return ", ".join(f"{k}: {fmt_compact(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(fmt_compact(x) for x in v)
    return fmt_text(v)


def with_points(text: str, x: Any, score_range: Any) -> str:
    """``text`` (a normalised score delta as shown) followed by :func:`fmt_points` in parentheses
    ("−0.0420000 (−4.2 points on 0–100)"); ``text`` alone when there is nothing to add."""
    pts = fmt_points(x, score_range)
    return f"{text} ({pts})" if pts else text


def with_points_ci(text: str, lo: Any, hi: Any, score_range: Any) -> str:
    """An interval as shown, followed by its bounds on the system's own scale
    ("[−0.06000, −0.03000] ([−6, −3] points on 0–100)"); ``text`` alone when there is nothing to add."""
    a, b = fmt_points(lo, score_range), fmt_points(hi, score_range)
    if not (a and b) or text == MISSING:
        return text
    b_num, scale = b.split(" points", 1)
    return f"{text} ([{a.split(' points')[0]}, {b_num}] points{scale})"


def fmt_points(x: Any, score_range: Any) -> str:
    """A normalised score difference on the system's own scale (issue 31 §3): ``x · (high − low)`` with
    3 significant digits and its sign, then the scale (``"−4.2 points on 0–100"``).

    Parameters
    ----------
    x : float
        A difference of scores normalised to [0, 1] by ``score_range`` (``metrics.csv`` ``score_delta``).
    score_range : sequence of two floats, or None
        The system's ``[low, high]`` score scale (``systems[].score_range``).

    Returns
    -------
    str
        Empty when ``x`` is missing, when the range is missing or not increasing, and when it is
        ``[0, 1]`` (the normalised value is then already on the system's scale).

    >>> fmt_points(-0.042, (0, 100))
    '−4.2 points on 0–100'
    """
    v = to_float(x)
    try:
        lo, hi = (float(b) for b in score_range)
    except (TypeError, ValueError):
        return ""
    if not (math.isfinite(v) and math.isfinite(lo) and math.isfinite(hi) and hi > lo) or (lo, hi) == (0.0, 1.0):
        return ""
    p = v * (hi - lo)
    s = "0" if abs(p) < ZERO_BELOW else f"{abs(p):.3g}"
    if "e" in s:
        s = fmt_sig(abs(p), 3)
    sign = "" if s == "0" else MINUS if p < 0 else "+"
    scale = f"{fmt_threshold(lo)} to {fmt_threshold(hi)}" if lo < 0 else f"{fmt_threshold(lo)}–{fmt_threshold(hi)}"
    return f"{sign}{s} points on {scale}"
