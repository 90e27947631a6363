"""The shared part of every report: header, systems, amendments, timings, versions, provenance.

:func:`build_core` turns a run's metadata (:class:`runtime.report.meta.ReportMeta`) into the plain,
formatted data the base template (``report.html.j2``) and its macros (``_macros.html.j2``) read
as ``core``; every audit family's section reads it too. No I/O; deterministic in its inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.report.formatting import (
    MISSING,
    fmt_compact,
    fmt_seconds,
    fmt_text,
    fmt_threshold,
    is_missing,
    to_float,
)
from runtime.report.meta import ReportMeta

#: What the header calls a report when the caller names no kind.
DEFAULT_KIND = "Correspondence audit report"


def _header(meta: ReportMeta, kind: str) -> dict[str, Any]:
    digest = meta.spec_digest or {}
    if isinstance(digest, str):
        digest = {"algorithm": "sha256", "digest": digest}
    return {
        "kind": kind,
        "title": fmt_text(meta.title, "Correspondence audit report"),
        "audit": fmt_text(meta.audit),
        "run_id": fmt_text(meta.run_id),
        "seed": fmt_text(meta.seed),
        "tool_version": fmt_text(meta.tool_version),
        "spec_path": fmt_text(meta.spec_path),
        "digest_algorithm": fmt_text(digest.get("algorithm"), "sha256"),
        "digest": fmt_text(digest.get("digest")),
        "lock_created_at": fmt_text(meta.lock_created_at),
        "generated_at": fmt_text(meta.generated_at),
    }


def _diagnostic(info: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the system could see (texts cut at an encoder's token window), for the systems macro."""
    if "max_seq_length" not in info:
        return None
    return {"distinct": f"{info.get('distinct_texts') or 0:,}", "truncated": f"{info.get('texts_truncated') or 0:,}",
            "any_truncated": bool(info.get("texts_truncated")), "limit": info.get("max_seq_length"),
            "longest": f"{info.get('max_tokens') or 0:,}"}


#: What the systems table says of every remote system (``kind: http``, issue 35 §2).
REMOTE_NOTE = "A remote system cannot be fingerprinted beyond what it declares."


def remote_text(info: Mapping[str, Any]) -> dict[str, str] | None:
    """A remote system's declared and observed versions (``systems_info.<id>``: ``version`` and
    ``observed_versions``, where each header or body path maps a value to the answers that named it), and
    the run's warning when answers named more than one version; None for a system that is not remote."""
    if "observed_versions" not in info:
        return None
    seen = [f"{value} ({where}, {n:,} answers)" for where, values in sorted(info["observed_versions"].items())
            for value, n in sorted(values.items())]
    return {"declared": fmt_text(info.get("version")), "observed": fmt_text("; ".join(seen) or "none named"),
            "note": REMOTE_NOTE, "warning": fmt_text(info.get("version_warning") or "")}


#: What the systems table says of a system without section data (older runs, score files, LLM systems).
NOT_MEASURED = "not measured"


def sections_text(info: Mapping[str, Any]) -> str:
    """Which résumé sections the system never reads (issue 31 §5), from ``systems_info.<id>.sections_past_window``.

    Returns
    -------
    str
        "EDUCATION starts past the window in 74% of résumés; SKILLS …" (each heading the design passes,
        in layout order, its share in percent: lower is better), or :data:`NOT_MEASURED` when the run
        recorded none.
    """
    shares = info.get("sections_past_window")
    if not shares:
        return NOT_MEASURED
    return "; ".join(f"{h} starts past the window in {float(s):.0%} of résumés" for h, s in shares.items())


def _systems(meta: ReportMeta) -> list[dict[str, Any]]:
    out = []
    for s in meta.systems:
        rng = s.score_range
        if isinstance(rng, (list, tuple)) and len(rng) == 2:
            rng_text = f"[{fmt_threshold(rng[0])}, {fmt_threshold(rng[1])}]"
        else:
            rng_text = fmt_text(rng)
        out.append({"id": fmt_text(s.id), "kind": fmt_text(s.kind),
                    "model": fmt_text(s.model), "fingerprint": fmt_text(s.fingerprint),
                    "score_range": rng_text,
                    "diagnostic": _diagnostic(meta.systems_info.get(s.id) or {}),
                    "remote": remote_text(meta.systems_info.get(s.id) or {}),
                    "sections": sections_text(meta.systems_info.get(s.id) or {}),
                    "read_as": read_as_text(meta.systems_info.get(s.id) or {})})
    return out


def read_as_text(info: Mapping[str, Any]) -> str:
    """How a score file was read as the vendor sent it (issue 37 §1: the column map, ignored columns, value
    maps, decimal mark, a trailing delimiter), so that a reader can replay it from the file whose sha256
    the lock names; '' for a file in the product's own format or another kind of system."""
    from compiler.score_file import mapping_text

    record = dict(info.get("read_as") or {})
    if not record:
        return ""
    cols = {p: n for p, n in (info.get("columns") or {}).items() if p != n and not str(n).startswith("variant_from(")}
    return fmt_text(mapping_text({"columns": cols, **record}))


def _amendments(meta: ReportMeta) -> list[dict[str, Any]]:
    """Every amendment: its reason first (the README promises it; "(none recorded)" without one),
    then its other fields (time, superseded lock, changed keys)."""
    out = []
    for i, a in enumerate(meta.amendments, start=1):
        if isinstance(a, Mapping):
            reason = a.get("reason")
            rest = [{"key": str(k), "value": fmt_text(v if not isinstance(v, (dict, list)) else fmt_compact(v))}
                    for k, v in a.items() if k != "reason"]
        else:
            reason, rest = a, []
        out.append({"index": i, "fields": [{"key": "reason", "value": fmt_text(reason, "(none recorded)")}, *rest]})
    return out


def _runs(runs: Any) -> list[dict[str, str]]:
    """Sealed runs as the report prints them: run id, seal time, signer ("unsigned" for none)."""
    return [{"run_id": fmt_text(r.get("run_id")), "sealed_at": fmt_text(r.get("sealed_at")),
             "signer": fmt_text(r.get("signer"), "unsigned")} for r in runs or [] if isinstance(r, Mapping)]


def _engagement(meta: ReportMeta) -> dict[str, Any] | None:
    """The engagement's history (issue 37 §3): the runs sealed under each superseded lock, and this run's
    place under its lock (``run_number``, the earlier runs); None when ``run.json`` has none."""
    e = meta.engagement
    if not isinstance(e, Mapping):
        return None
    this = e.get("this_lock") if isinstance(e.get("this_lock"), Mapping) else {}
    return {"superseded": [{"amendment": s.get("amendment"), "created_at": fmt_text(s.get("created_at")),
                            "spec_digest": fmt_text(s.get("spec_digest")), "runs": _runs(s.get("runs"))}
                           for s in e.get("superseded") or [] if isinstance(s, Mapping)],
            "run_number": this.get("run_number") or 1, "earlier": _runs(this.get("runs"))}


def build_core(meta: ReportMeta, *, provenance: Mapping[str, Any] | None = None,
               kind: str = DEFAULT_KIND) -> dict[str, Any]:
    """The shared data of the report (``core`` in every template).

    Parameters
    ----------
    meta : ReportMeta
        Run metadata (:func:`runtime.pipeline.metadata.report_meta`): audit, title, run id, seed, spec digest,
        lock and run times, tool version, systems (and ``systems_info``), amendments, timings,
        versions. Missing values (None) are shown as an em dash.
    provenance : Mapping, optional
        :func:`runtime.provenance.sign.provenance_context` of the run: adds the "Reproduction and signature"
        part with the ``#signature-box`` element the PDF signature is placed over.
    kind : str
        What the report is, in the header and the PDF's running head.

    Returns
    -------
    dict
        ``header`` (``header.generated_at`` is the PDF's clock, see
        :func:`runtime.report.render.source_date_epoch`), ``systems``, ``amendments``, ``timings``,
        ``total_time``, ``versions``, ``provenance`` (None without one), ``resumed`` (each
        ``--resume`` of the run: time, previous status, stage) and ``reused_tasks`` (tasks taken from
        the task store).
    """
    timings = [{"stage": str(k), "seconds": fmt_seconds(v)} for k, v in meta.timings.items()]
    total = sum(to_float(v) for v in meta.timings.values() if not is_missing(v))
    versions = [{"package": str(k), "version": fmt_text(v)}
                for k, v in sorted(meta.versions.items(), key=lambda kv: str(kv[0]).lower())]
    return {
        "header": _header(meta, kind),
        "systems": _systems(meta),
        "amendments": _amendments(meta),
        "timings": timings,
        "total_time": fmt_seconds(total) if timings else MISSING,
        "versions": versions,
        "provenance": dict(provenance) if provenance is not None else None,
        "resumed": [{"at": fmt_text(r.get("at")), "previous_status": fmt_text(r.get("previous_status")),
                     "stage": fmt_text(r.get("stage"))} for r in meta.resumed],
        "reused_tasks": [str(t) for t in meta.reused_tasks],
        "lock_signature": dict(meta.lock_signature or {}) or None,
        "engagement": _engagement(meta),
        "lock_recreated": [{"created_at": fmt_text(e.get("created_at")), "spec_digest": fmt_text(e.get("spec_digest")),
                            "source": fmt_text(e.get("source"))} for e in meta.lock_recreated],
    }
