"""Inline-SVG bar charts of one metric by variant (seed 000 §3.8; seed 002 Figures 2–10).

One bar per variant, coloured by its research-tier status, with the 95% interval as an error bar,
dashed lines at the PASS bound and seed 000's INVESTIGATE bound, and the reference variant outlined and
labelled. matplotlib is imported lazily and drawn on an Agg canvas owned by the figure (pyplot and
the global backend are never touched). The SVG keeps text as text (``svg.fonttype: none``), carries
no date and uses a fixed id salt per chart, so the same inputs give the same bytes; the XML
prologue, namespace declarations and RDF metadata are stripped so that the chart can be inlined in
HTML without any URL in the document.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence

from runtime.report.formatting import fmt_threshold

#: Status colours (fill, and a darker tone for lines and text). Shared with the CSS.
STATUS_COLOURS: dict[str, str] = {
    "PASS": "#2e8540",
    "INCONCLUSIVE": "#e0a526",
    "INVESTIGATE": "#e0a526",
    "FAIL": "#c62828",
    "N/A": "#9aa1a9",
}
#: Hatching so that statuses stay distinguishable in greyscale print and for colour-blind readers.
STATUS_HATCH: dict[str, str] = {"PASS": "", "INCONCLUSIVE": "///", "INVESTIGATE": "///", "FAIL": "xxx", "N/A": ""}
PASS_LINE = "#1b5e20"
INVESTIGATE_LINE = "#9a6700"
#: Thresholds drawn for reference that the bars' statuses do not read (``decides=False``): grey, 5.7:1 on white.
UNREAD_LINE = "#666666"

_STRIP = (
    re.compile(r"<\?xml[^>]*\?>\s*"),
    re.compile(r"<!DOCTYPE[^>]*>\s*", re.S),
    re.compile(r"\s*<metadata>.*?</metadata>", re.S),
    re.compile(r'\s+xmlns(:\w+)?="[^"]*"'),
)


#: Hatch lines per character of a hatch, as matplotlib draws them (``Path.hatch``'s default density 6): the
#: ``n`` lines of a 72-point tile are ``2 · 72 / n`` points apart along the x axis (``hatch.NorthEastHatch``).
HATCH_LINES_PER_CHAR = 6


def _hatch_segments(x0: float, y0: float, x1: float, y1: float, hatch: str) -> list[tuple[tuple[float, float],
                                                                                         tuple[float, float]]]:
    """Segments of matplotlib's hatch ``hatch`` ("/" north-east lines, "x" both diagonals, as many and as far
    apart as matplotlib draws them: :data:`HATCH_LINES_PER_CHAR`) inside the rectangle ``[x0, x1] × [y0, y1]``
    (display points, y up), clipped to it exactly. One line of each direction passes through the rectangle's
    centre, so that a legend key, smaller than the spacing, shows a centred "/" or "X"."""
    n = HATCH_LINES_PER_CHAR * (hatch.count("/") + hatch.count("x") + hatch.count("X"))
    if not n or x1 <= x0 or y1 <= y0:
        return []
    step = 2 * 72.0 / n
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    out = []
    for slope in ((1,) if "x" not in hatch.lower() else (1, -1)):
        lo, hi = (y0 - x1, y1 - x0) if slope == 1 else (x0 + y0, x1 + y1)  # c of y = slope·x + c through the box
        centre = cy - slope * cx  # the line through the centre
        for k in range(math.ceil((lo - centre) / step), math.floor((hi - centre) / step) + 1):
            c = centre + k * step
            a, b = ((y0 - c, y1 - c) if slope == 1 else (c - y1, c - y0))
            a, b = max(a, x0), min(b, x1)
            if b - a > 1e-9:
                out.append(((a, slope * a + c), (b, slope * b + c)))
    return out


def _draw_hatches(fig) -> None:
    """Replace every hatched rectangle's hatch (bars, legend keys) by white line segments clipped to it.

    WeasyPrint turns each use of an SVG ``<pattern>`` (matplotlib's hatch) into a PDF pattern of its own,
    listed in the resource dictionary that every page shares, so a report's pages × hatched bars made the
    object paths pyHanko walks in each verify of a countersigned report (see :func:`_svg`). The segments
    reproduce matplotlib's hatch (:func:`_hatch_segments`, ``hatch.color``, ``hatch.linewidth``), drawn
    just above their rectangle, inside its edge. The layout is fixed first (``draw_without_rendering``: the
    legends' places)."""
    from matplotlib import rcParams
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle
    from matplotlib.transforms import IdentityTransform

    fig.draw_without_rendering()  # the layout (the legends' places), no pixels
    hosts = ([(ax, p, p.get_zorder()) for ax in fig.axes for p in ax.patches]  # drawn with their axes
             + [(fig, p, lg.get_zorder()) for lg in fig.legends for p in lg.get_patches()])  # above the legend
    for host, patch, zorder in hosts:
        hatch = patch.get_hatch()
        if not hatch or not isinstance(patch, Rectangle):
            continue
        box = patch.get_window_extent()
        inset = patch.get_linewidth() / 2
        segs = _hatch_segments(box.x0 + inset, box.y0 + inset, box.x1 - inset, box.y1 - inset, hatch)
        patch.set_hatch(None)
        lines = LineCollection(segs, colors=rcParams["hatch.color"], linewidths=rcParams["hatch.linewidth"],
                               transform=IdentityTransform(), zorder=zorder + 0.001)
        lines.set_clip_on(False)
        if host is fig:
            fig.add_artist(lines)
        else:
            host.add_collection(lines, autolim=False)


def _svg(fig) -> str:
    """``fig`` as SVG (``savefig``, no date), every text anchored at its start, hatches drawn as lines
    (:func:`_draw_hatches`).

    Matplotlib writes a centred or right-aligned one-line text as ``text-anchor: middle``/``end`` at its
    anchor point (and a multi-line one already at its start, placed by its own metrics). WeasyPrint draws each
    such text into a form XObject of its own to measure and shift it, and lists every XObject in the resource
    dictionary that all pages share: the example's report held 200 of them, on each of 59 pages. pyHanko's
    difference analysis of a countersigned or B-LTA report walks every path to every object of each revision,
    and those paths made one ``audit verify`` of a countersigned test report take some 40 s. Here each such
    text is written at the start point matplotlib laid it out at (the ``mtext=None`` branch of
    ``RendererSVG.draw_text``): the same place in the same font, with no XObject. Matplotlib offers no option
    for this, so its ``RendererSVG`` is swapped for a subclass while this figure is saved (the report renders
    in one thread)."""
    from unittest import mock

    from matplotlib.backends import backend_svg

    class StartAnchored(backend_svg.RendererSVG):
        def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
            if mtext is not None and mtext.get_ha() != "left":
                mtext = None  # x, y: the laid-out start of the text
            super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)

    _draw_hatches(fig)
    buf = io.StringIO()
    with mock.patch.object(backend_svg, "RendererSVG", StartAnchored):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def _clean_svg(svg: str, *, title: str) -> str:
    for pattern in _STRIP:
        svg = pattern.sub("", svg, count=1) if pattern.pattern.startswith("<") else pattern.sub("", svg)
    svg = re.sub(r"\s+(width|height)=\"[0-9.]+pt\"", "", svg, count=2)
    # Keep only the ids that something refers to (clip paths, markers, hatches; salted per chart):
    # matplotlib's structural ids (figure_1, axes_1, patch_3, ...) would repeat in every inline chart.
    used = set(re.findall(r"#([A-Za-z_][\w.-]*)", svg))
    svg = re.sub(r'\s+id="([^"]*)"', lambda m: m.group(0) if m.group(1) in used else "", svg)
    # matplotlib's global style rule, scoped to this chart
    svg = svg.replace("<style type=\"text/css\">*{", "<style type=\"text/css\">.chart-svg *{", 1)
    safe_title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    svg = svg.replace("<svg ", '<svg role="img" class="chart-svg" ', 1)
    svg = re.sub(r"(<svg[^>]*>)", lambda m: m.group(1) + f"\n <title>{safe_title}</title>", svg, count=1)
    return svg.strip() + "\n"


def _spread(positions: list[float], min_gap: float) -> list[float]:
    """Push label positions (axes fraction, ascending order kept) apart by at least ``min_gap``."""
    order = sorted(range(len(positions)), key=lambda i: positions[i])
    out = list(positions)
    for a, b in zip(order, order[1:]):
        if out[b] - out[a] < min_gap:
            out[b] = out[a] + min_gap
    return out


def metric_chart_svg(
    *,
    chart_id: str,
    title: str,
    ylabel: str,
    variants: Sequence[str],
    values: Sequence[float],
    ci_low: Sequence[float],
    ci_high: Sequence[float],
    statuses: Sequence[str],
    reference: str,
    pass_threshold: float,
    investigate_threshold: float,
    direction: str,
    symmetric: bool = False,
    signed_scale: bool = False,
    reciprocal: bool = False,
    seed000: bool = True,
    decides: bool = True,
) -> str:
    """Return one metric's bar chart as an inline ``<svg>`` element (a string).

    Parameters
    ----------
    chart_id : str
        Unique, stable id of the chart in the report; salts the SVG element ids so that two charts
        never share an id and the same chart always gets the same ids.
    title : str
        Accessible title (``<title>`` of the SVG); the visible heading is the report's.
    ylabel : str
        Y-axis label (the metric's short name).
    variants, values, ci_low, ci_high, statuses : sequences of equal length
        One entry per bar; NaN values draw an "N/A" marker instead of a bar.
    reference : str
        The reference variant, outlined in black and labelled "(reference)".
    pass_threshold, investigate_threshold : float
        Research-tier thresholds, drawn as dashed lines.
    direction : {"lower", "higher"}
        Which side of the thresholds is better (used for the line labels).
    symmetric : bool
        The statistic is classified on its absolute value: lines are drawn at ± each threshold.
    signed_scale : bool
        Let the y axis extend below zero for negative values.
    reciprocal : bool
        The PASS band is ``[pass, 1/pass]`` and the INVESTIGATE band ``[investigate, 1/investigate]`` (the
        selection ratio, :func:`runtime.analysis.classify.pass_band`): the upper bounds are drawn too.
    seed000 : bool
        The INVESTIGATE threshold is seed 000's (Table 3); else it is labelled without the seed.
    decides : bool
        The bars' statuses read these thresholds. False (the flip rate, retention and the retention ratio, decided
        on the selection ratio's interval): the lines are drawn grey and labelled "Table 3 PASS" and "Table 3
        INVESTIGATE" (seed 000 Table 3's statuses of the point estimate read them; "not read: " without
        ``seed000``), so that no line says PASS above a bar it does not colour.
    """
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.transforms import blended_transform_factory

    n = len(variants)
    vals = [float(v) if v is not None and math.isfinite(float(v)) else math.nan for v in values]
    lows = [float(v) if v is not None and math.isfinite(float(v)) else math.nan for v in ci_low]
    highs = [float(v) if v is not None and math.isfinite(float(v)) else math.nan for v in ci_high]
    stats = [s if s in STATUS_COLOURS else "N/A" for s in statuses]
    cmp = "≤" if direction == "lower" else "≥"
    sym = "|Δ| " if symmetric else ""

    rc = {
        "svg.fonttype": "none",
        "svg.hashsalt": f"audit-compiler-report:{chart_id}",
        "svg.id": None,
        "font.family": "DejaVu Sans",
        "font.size": 8.5,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "hatch.linewidth": 0.8,
        "hatch.color": "#ffffff",
    }
    with matplotlib.rc_context(rc):
        fig = Figure(figsize=(7.2, 2.9), dpi=72)  # = the A4 text width: charts print at 1:1
        FigureCanvasAgg(fig)
        rotate = n > 14
        bottom = 0.27 if rotate else 0.19
        # the threshold labels right of the axes need 132 pt ("seed 000 INVESTIGATE |Δ| ≤ 0.05" at 7.2 pt bold):
        # the figure is 518 pt wide, so the axes end at 0.105 + 0.62 (the SVG would clip a longer label)
        ax = fig.add_axes((0.105, bottom, 0.62, 0.87 - bottom))

        xs = list(range(n))
        heights = [0.0 if math.isnan(v) else v for v in vals]
        colours = [STATUS_COLOURS[s] for s in stats]
        bars = ax.bar(xs, heights, width=0.66, color=colours, edgecolor=colours, linewidth=0.8, zorder=2)
        for bar, s, v in zip(bars, stats, variants):
            bar.set_hatch(STATUS_HATCH[s])
            if v == reference:
                bar.set_edgecolor("#111111")
                bar.set_linewidth(2.0)

        err_x, err_y, err_lo, err_hi = [], [], [], []
        for x, v, lo, hi in zip(xs, vals, lows, highs):
            if math.isnan(v) or math.isnan(lo) or math.isnan(hi):
                continue
            err_x.append(x)
            err_y.append(v)
            err_lo.append(max(0.0, v - lo))
            err_hi.append(max(0.0, hi - v))
        if err_x:
            ax.errorbar(err_x, err_y, yerr=[err_lo, err_hi], fmt="none", ecolor="#222222",
                        elinewidth=1.0, capsize=3, capthick=1.0, zorder=3)

        # y range: always show both thresholds and every interval.
        finite = [x for x in vals + lows + highs if not math.isnan(x)]
        thr = [t for t in (pass_threshold, investigate_threshold) if t is not None and math.isfinite(t)]
        top_data = max([abs(x) for x in finite] + [0.0])
        if symmetric:
            span = max([t * 1.25 for t in thr] + [top_data * 1.12, 1e-6])
            ax.set_ylim(-span, span)
        elif direction == "higher":
            top = max([1.05] + [x * 1.06 for x in finite] + ([1.06 / t for t in thr if t > 0] if reciprocal else []))
            bottom = min([0.0] + [x * 1.1 for x in finite])
            ax.set_ylim(bottom, top)
        else:
            top = max([t * 1.3 for t in thr] + [x * 1.1 for x in finite] + [1e-6])
            bottom = min([0.0] + [x * 1.1 for x in finite]) if signed_scale else min([0.0] + finite)
            ax.set_ylim(bottom, top)
        ax.axhline(0.0, color="#444444", linewidth=0.8, zorder=1)

        lines = []
        pass_colour, investigate_colour = (PASS_LINE, INVESTIGATE_LINE) if decides else (UNREAD_LINE, UNREAD_LINE)
        # not read by the bars: named by the rule that does read them, seed 000 Table 3's on the point estimate
        table3 = "" if decides else ("Table 3 " if seed000 else "not read: ")
        if pass_threshold is not None and math.isfinite(pass_threshold):
            lines.append((pass_threshold, pass_colour, f"{table3}PASS {sym}{cmp} {fmt_threshold(pass_threshold)}"))
        investigate = ("seed 000 INVESTIGATE" if seed000 else "INVESTIGATE") if decides else f"{table3}INVESTIGATE"
        if investigate_threshold is not None and math.isfinite(investigate_threshold):
            lines.append((investigate_threshold, investigate_colour,
                          f"{investigate} {sym}{cmp} {fmt_threshold(investigate_threshold)}"))
        if reciprocal:  # the bands' upper ends, 1/pass and 1/investigate, printed to 2 decimals (1.25, 1.43)
            lines += [(1.0 / t, colour, f"{label} ≤ {1.0 / t:.2f}") for t, colour, label in
                      ((pass_threshold, PASS_LINE, "PASS"), (investigate_threshold, INVESTIGATE_LINE, investigate))
                      if t is not None and math.isfinite(t) and t > 0]
        for y, colour, _ in lines:
            ax.axhline(y, color=colour, linestyle=(0, (5, 3)), linewidth=1.2, zorder=4)
            if symmetric:
                ax.axhline(-y, color=colour, linestyle=(0, (5, 3)), linewidth=1.2, zorder=4)
        lo_lim, hi_lim = ax.get_ylim()
        fracs = [(y - lo_lim) / (hi_lim - lo_lim) for y, _, _ in lines]
        fracs = _spread(fracs, 0.085)
        trans = blended_transform_factory(ax.transAxes, ax.transAxes)
        for frac, (_, colour, text) in zip(fracs, lines):
            ax.text(1.015, frac, text, transform=trans, ha="left", va="center", fontsize=7.2,
                    color=colour, fontweight="bold")

        for x, v in zip(xs, vals):
            if math.isnan(v):
                ax.text(x, (hi_lim - lo_lim) * 0.03 + max(lo_lim, 0.0), "N/A", ha="center",
                        va="bottom", fontsize=7.5, color="#555555", zorder=5)

        ax.set_xlim(-0.6, n - 0.4)
        ax.set_xticks(xs)
        ref_label = "{} (ref.)" if rotate else "{}\n(reference)"
        labels = [ref_label.format(v) if v == reference else v for v in variants]
        if rotate:
            ax.set_xticklabels(labels, rotation=60, ha="right", rotation_mode="anchor", fontsize=7.5)
        else:
            ax.set_xticklabels(labels)
        for tick, v in zip(ax.get_xticklabels(), variants):
            if v == reference:
                tick.set_fontweight("bold")
        ax.tick_params(axis="x", length=0)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", color="#e3e6ea", linewidth=0.6, zorder=0)
        ax.set_axisbelow(True)

        handles = [Patch(facecolor=STATUS_COLOURS[s], edgecolor=STATUS_COLOURS[s], hatch=STATUS_HATCH[s],
                         label=s) for s in ("PASS", "INCONCLUSIVE", "FAIL", "N/A")]
        handles.append(Line2D([0], [0], color="#222222", linewidth=1.0, marker="_", markersize=6,
                              label="95% CI"))
        handles.append(Patch(facecolor="white", edgecolor="#111111", linewidth=2.0, label="reference"))
        fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.08, 1.0), ncol=len(handles),
                   frameon=False, fontsize=7.5, handlelength=1.6, columnspacing=1.2)

        svg = _svg(fig)
    return _clean_svg(svg, title=title)


#: Forest-plot colours (seed 003 Figure 1): meaningful (|d| ≥ SESOI and q < α) vs the rest.
FOREST_MEANINGFUL = "#1f5fa8"
FOREST_OTHER = "#6b7480"


def forest_plot_svg(
    *,
    chart_id: str,
    title: str,
    labels: Sequence[str],
    d: Sequence[float],
    ci_low: Sequence[float],
    ci_high: Sequence[float],
    meaningful: Sequence[bool],
    sesoi: float,
) -> str:
    """Forest plot of Cohen's d with 95% CIs and the ±SESOI band (seed 003 Figure 1), inline SVG.

    Parameters
    ----------
    chart_id : str
        Stable id; salts the SVG ids.
    title : str
        Accessible title.
    labels, d, ci_low, ci_high, meaningful : sequences of equal length
        One row per contrast, drawn top to bottom; NaN d draws "undefined".
    sesoi : float
        Half-width of the shaded negligible band (|d| < SESOI); a dashed line marks d = 0.
    """
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    def _f(v: float) -> float:
        return float(v) if v is not None and math.isfinite(float(v)) else math.nan

    n = len(labels)
    vals, lows, highs = [_f(v) for v in d], [_f(v) for v in ci_low], [_f(v) for v in ci_high]
    finite = [x for x in vals + lows + highs if math.isfinite(x)] + [sesoi, -sesoi]
    lo, hi = min(finite), max(finite)
    pad = 0.08 * (hi - lo or 1.0)
    rc = {"svg.fonttype": "none", "svg.hashsalt": f"audit-compiler-report:{chart_id}", "svg.id": None,
          "font.family": "DejaVu Sans", "font.size": 8.0, "axes.spines.top": False,
          "axes.spines.right": False}
    with matplotlib.rc_context(rc):
        height = 0.9 + 0.22 * n
        fig = Figure(figsize=(7.2, height), dpi=72)
        FigureCanvasAgg(fig)
        ax = fig.add_axes((0.36, 0.55 / height, 0.6, 1 - 0.75 / height))
        ax.axvspan(-sesoi, sesoi, color="#e8ecf1", zorder=0, label=f"|d| < {sesoi:g} (negligible)")
        ax.axvline(0, color="#333333", linestyle="--", linewidth=0.8, zorder=1)
        ys = list(range(n))[::-1]
        for y, v, a, b, m in zip(ys, vals, lows, highs, meaningful):
            colour = FOREST_MEANINGFUL if m else FOREST_OTHER
            if math.isfinite(v):
                if math.isfinite(a) and math.isfinite(b):
                    ax.plot([a, b], [y, y], color=colour, linewidth=1.4, zorder=3)
                ax.plot([v], [y], marker="s" if m else "o", color=colour, markersize=5, zorder=4)
            else:
                ax.text(0, y, "undefined", ha="center", va="center", fontsize=7, color="#555555")
        ax.set_yticks(ys)
        ax.set_yticklabels(labels, fontsize=7.5)
        ax.set_ylim(-0.7, n - 0.3)
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_xlabel("Cohen's d (pooled SD), 95% CI")
        ax.tick_params(axis="y", length=0)
        ax.grid(axis="x", color="#e3e6ea", linewidth=0.6, zorder=0)
        svg = _svg(fig)
    return _clean_svg(svg, title=title)


#: Colours of the causal decomposition chart: significant (the band excludes 0) vs not significant (it
#: contains 0; not "negligible", which only an equivalence test could say).
CAUSAL_COLOURS = {"significant": "#1f4e79", "not_significant": "#b8c4d0"}


def causal_chart_svg(*, chart_id: str, title: str, ylabel: str, effects: Sequence[str],
                     values: Sequence[float], ci_low: Sequence[float], ci_high: Sequence[float],
                     significant: Sequence[bool]) -> str:
    """TE, NDE, NIE, BIE, RIE with 95% CIs as an inline ``<svg>`` (seed 001 Fig. 4 style).

    Dark bars: the band excludes 0 (significant, seed 001 §5.1); light hatched bars: not significant
    (the band contains 0; no equivalence test is run, so never "negligible"). A solid
    line marks 0; NIE = BIE + RIE is drawn as a bracket note under the axis.
    """
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    rc = {"svg.fonttype": "none", "svg.hashsalt": f"audit-compiler-report:{chart_id}", "svg.id": None,
          "font.family": "DejaVu Sans", "font.size": 8.5, "axes.spines.top": False,
          "axes.spines.right": False, "hatch.linewidth": 0.8, "hatch.color": "#ffffff"}
    with matplotlib.rc_context(rc):
        fig = Figure(figsize=(7.2, 2.7), dpi=72)
        FigureCanvasAgg(fig)
        ax = fig.add_axes((0.12, 0.16, 0.85, 0.68))
        xs = list(range(len(effects)))
        colours = [CAUSAL_COLOURS["significant" if s else "not_significant"] for s in significant]
        bars = ax.bar(xs, values, width=0.6, color=colours, edgecolor=colours, zorder=2)
        for bar, s in zip(bars, significant):
            bar.set_hatch("" if s else "///")
        ax.errorbar(xs, values, yerr=[[max(0.0, v - lo) for v, lo in zip(values, ci_low)],
                                      [max(0.0, hi - v) for v, hi in zip(values, ci_high)]],
                    fmt="none", ecolor="#222222", elinewidth=1.0, capsize=4, zorder=3)
        ax.axhline(0.0, color="#222222", linewidth=0.9, zorder=1)
        span = max([abs(x) for x in list(ci_low) + list(ci_high) + list(values)] + [1e-9]) * 1.15
        ax.set_ylim(-span, span)
        ax.set_xticks(xs)
        ax.set_xticklabels(effects, fontweight="bold")
        ax.tick_params(axis="x", length=0)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", color="#e3e6ea", linewidth=0.6, zorder=0)
        ax.set_axisbelow(True)
        handles = [Patch(facecolor=CAUSAL_COLOURS["significant"], label="significant (the band excludes 0)"),
                   Patch(facecolor=CAUSAL_COLOURS["not_significant"], hatch="///",
                         label="not significant (the band contains 0)")]
        fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.1, 1.0), ncol=2, frameon=False,
                   fontsize=7.5)
        svg = _svg(fig)
    return _clean_svg(svg, title=title)


#: Noise-floor chart colours (issue 38 §6): demographic variants, placebo variants, the floor.
FLOOR_DEMOGRAPHIC = "#1f5fa8"
FLOOR_PLACEBO = "#d9822b"
FLOOR_LINE = "#c62828"
#: Below this deviation the noise-floor chart's axis is linear (a symmetric log scale above it).
FLOOR_LINTHRESH = 1e-3


def noise_floor_chart_svg(
    *,
    chart_id: str,
    title: str,
    metrics: Sequence[str],
    demographic: Sequence[Sequence[float]],
    placebo: Sequence[Sequence[float]],
    floors: Sequence[float],
) -> str:
    """One system's demographic and placebo deviations per metric on one axis, with its floor (issue 38 §6),
    as an inline ``<svg>`` element (a string).

    One row per metric, top to bottom in ``metrics`` order: a blue circle per demographic variant, an orange
    diamond per placebo variant the system reads, and a red tick at the floor (the largest placebo deviation).
    The x axis is the deviation from no effect (``|value|``, ``|1 − value|`` for the retention and impact
    ratios; >= 0, smaller is better), shared by every metric, on a symmetric log scale (linear below
    :data:`FLOOR_LINTHRESH`) so that score shifts of 0.01 and flip rates of 0.2 both stay readable.

    Parameters
    ----------
    chart_id : str
        Stable id; salts the SVG ids.
    title : str
        Accessible title.
    metrics : sequence of str
        The row labels (metric ids).
    demographic, placebo : sequences of sequences of float
        Per metric, the deviations of the demographic variants and of the placebo variants the system reads;
        NaN entries are skipped.
    floors : sequence of float
        Per metric, the floor (NaN: no read control gives one, no tick).
    """
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    def _finite(xs: Sequence[float]) -> list[float]:
        out = []
        for x in xs:
            try:
                v = float(x)
            except (TypeError, ValueError):
                continue
            if math.isfinite(v):
                out.append(v)
        return out

    n = len(metrics)
    rc = {"svg.fonttype": "none", "svg.hashsalt": f"audit-compiler-report:{chart_id}", "svg.id": None,
          "font.family": "DejaVu Sans", "font.size": 8.0, "axes.spines.top": False,
          "axes.spines.right": False}
    with matplotlib.rc_context(rc):
        height = 1.1 + 0.26 * n
        fig = Figure(figsize=(7.2, height), dpi=72)
        FigureCanvasAgg(fig)
        ax = fig.add_axes((0.25, 0.62 / height, 0.72, 1 - 0.98 / height))
        ys = list(range(n))[::-1]
        top = 0.0
        for y, dem, pla, fl in zip(ys, demographic, placebo, floors):
            d, p = _finite(dem), _finite(pla)
            top = max([top, *d, *p])
            if d:
                ax.plot(d, [y + 0.12] * len(d), linestyle="none", marker="o", markersize=4.5, alpha=0.8,
                        color=FLOOR_DEMOGRAPHIC, zorder=3)
            if p:
                ax.plot(p, [y - 0.12] * len(p), linestyle="none", marker="D", markersize=4.5, alpha=0.9,
                        color=FLOOR_PLACEBO, zorder=3)
            f = _finite([fl])
            if f:
                ax.plot([f[0], f[0]], [y - 0.38, y + 0.38], color=FLOOR_LINE, linewidth=1.6, zorder=4)
        ax.set_xscale("symlog", linthresh=FLOOR_LINTHRESH)
        ax.set_xlim(0.0, max(top * 1.5, 0.01))
        # plain tick labels (0.001, not 10 with a superscript -3: a superscript prints under the report's 6.5 pt minimum)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:g}"))
        ax.set_yticks(ys)
        ax.set_yticklabels(list(metrics), fontsize=7.5)
        ax.set_ylim(-0.7, n - 0.3)
        ax.set_xlabel(f"deviation from no effect (|value| or |1 − value|; symmetric log scale, linear below "
                      f"{FLOOR_LINTHRESH:g})")
        ax.tick_params(axis="y", length=0)
        ax.grid(axis="x", color="#e3e6ea", linewidth=0.6, zorder=0)
        ax.set_axisbelow(True)
        handles = [Line2D([0], [0], linestyle="none", marker="o", color=FLOOR_DEMOGRAPHIC, label="demographic variant"),
                   Line2D([0], [0], linestyle="none", marker="D", color=FLOOR_PLACEBO, label="placebo variant (read)"),
                   Line2D([0], [0], color=FLOOR_LINE, linewidth=1.6, label="floor (largest placebo deviation)")]
        fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.2, 1.0), ncol=3, frameon=False,
                   fontsize=7.5)
        svg = _svg(fig)
    return _clean_svg(svg, title=title)
