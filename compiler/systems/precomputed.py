"""The ``precomputed`` system kind: scores produced elsewhere (a vendor's export), read from a score
file; fingerprint: sha256 of the file. Its spec model: :mod:`compiler.blocks.precomputed`."""

from __future__ import annotations

from typing import Any

from compiler.blocks import precomputed as block
from compiler.errors import Issue
from compiler.load import LoadedSpec
from compiler.paths import resolve_inside
from compiler.systems.base import CORE, FileRef, Requires, SystemKind, file_ref, score_resolution, system_kind

MSG_BLIND_DESIGN = ("blind: true needs a design whose résumés the tool writes (candidates.generator: template or "
                    "llm), which `audit export --for-vendor` hands to the vendor; a score-file audit has nothing "
                    "to export")
MSG_VARIANT_FROM_AXIS = "{axis!r} is not an axis of the spec; axes: {axes}"
MSG_VARIANT_FROM_AND_COLUMN = ("variant_from finds the variant from several columns; columns.variant ({column!r}) "
                               "names it a second way: keep one")
MSG_DECIMAL_THOUSANDS = "decimal and thousands are both {mark!r}; the decimal mark and the thousands separator differ"
MSG_DECIMAL_IS_DELIMITER = ("the decimal mark {mark!r} is the delimiter; a decimal comma needs delimiter ';', "
                            "tab or '|'")
MSG_MAPPING_BLIND = "{name} maps a score export's columns; a blind file has only resume_id and score"
#: The keys that read a vendor's export as it came (issue 37 §1); absent from the resolved spec unless written.
MAPPING_KEYS = ("ignore_columns", "values", "case_insensitive", "variant_from", "decimal", "thousands")
MSG_BLIND_COLUMNS = ("a blind score file has the columns resume_id and score; columns may only rename score "
                     "(got {got})")
#: What the lock records as the fingerprint of a blind score file, which comes back after the lock.
BLIND_FINGERPRINT = "returned after the lock: see run.json systems_info.<system id>.blind.file_sha256"


def read_system_file(ls: LoadedSpec, i: int, system: Any):
    """The checked score file of a ``precomputed`` system (:func:`compiler.score_file.read_score_file`),
    or None when the path does not resolve or the score range is inverted (both reported elsewhere).
    Called once the design is known to be sound (its variant table is then valid).

    With a generator (the tool wrote the résumés the vendor scored) the base candidates are only
    known at execute: the file is checked against the jobs and variants, and K is not checked. A
    population design's profile scores are checked at execute (the profile ids come from the generator).
    The file is parsed once per (file state, spec) however many steps of a compile ask for it.
    """
    from compiler.score_file import FileMapping, read_score_file
    from compiler.variants import variant_table

    path, err = resolve_inside(ls.folder, system.path)
    lo, hi = system.score_range
    if err is not None or not lo < hi:
        return None
    cand = ls.spec.candidates
    if cand is not None and cand.generator == "population":  # profile ids exist only once generated
        return None
    try:
        table = variant_table(ls.spec) if ls.spec.axes else {}
    except (KeyError, ValueError):
        table = {}
    variants = list(table) if ls.spec.axes else None
    fm = FileMapping.of(system)
    controls = tuple(c.id for c in ls.spec.variants.negative_controls or ()) if cand is None else ()
    positive = tuple(c.id for c in ls.spec.variants.positive_controls or ()) if cand is None else ()  # issue 39 §6
    # K is checked against the file for a top-K rule; under a threshold no shortlist must be filled
    k = ls.spec.analysis.shortlist() if cand is None and not ls.spec.analysis.selects_by_threshold() else None
    jobs = [j.id for j in ls.spec.jobs]
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, tuple(jobs), tuple(variants or ()), (lo, hi),
           tuple(sorted((system.columns or {}).items())), system.delimiter, tuple(sorted((k or {}).items())), i, controls, positive,
           repr(fm))
    if key not in _READ_CACHE:
        if len(_READ_CACHE) >= 16:
            _READ_CACHE.clear()
        _READ_CACHE[key] = read_score_file(path, jobs=jobs, variants=variants, score_range=(lo, hi),
                                           columns=system.columns, delimiter=system.delimiter, k=k,
                                           key=f"systems[{i}]", controls=controls, file_mapping=fm, table=table,
                                           positive_controls=positive)
    return _READ_CACHE[key]


#: Score files already read in this process, by (path, mtime, size, what the spec asks of them).
_READ_CACHE: dict[tuple, Any] = {}


def _written(ls: LoadedSpec, loc: tuple) -> bool:
    """Whether the spec's YAML holds a key at ``loc`` (a problem of a mapping key is located there, else
    at the system's ``path``)."""
    node: Any = ls.raw
    for part in loc:
        if isinstance(node, dict) and str(part) in node:
            node = node[str(part)]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return False
    return True


@system_kind
class Precomputed(SystemKind):
    """Scores produced elsewhere (a vendor's export); fingerprint: sha256 of the score file."""

    id = "precomputed"
    needs_text = False
    model = block.System

    def requires(self, system: Any) -> Requires:
        """A score file needs the core install only."""
        return CORE

    def files(self, i: int, system: Any) -> list[FileRef]:
        if system.blind:  # the vendor returns it after the lock (audit export --for-vendor)
            return []
        return [(("systems", i, "path"), system.path, "file")]

    def issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        out = super().issues(ls, i, system)
        cand = ls.spec.candidates
        if system.blind and (cand is None or cand.generator == "population"):
            out.append(ls.issue(("systems", i, "blind"), MSG_BLIND_DESIGN))
        elif system.blind and system.columns and set(system.columns) - {"score"}:
            out.append(ls.issue(("systems", i, "columns"), MSG_BLIND_COLUMNS.format(
                got=", ".join(sorted(set(system.columns) - {"score"})))))
        for name in MAPPING_KEYS:
            if system.blind and getattr(system, name) is not None:
                out.append(ls.issue(("systems", i, name), MSG_MAPPING_BLIND.format(name=name), key=True))
        axes = list(ls.spec.axes or {})
        for axis in system.variant_from or {}:
            if axis not in axes:
                out.append(ls.issue(("systems", i, "variant_from", axis), MSG_VARIANT_FROM_AXIS.format(
                    axis=axis, axes=", ".join(axes) or "(none)"), key=True))
        if system.variant_from and (system.columns or {}).get("variant"):
            out.append(ls.issue(("systems", i, "variant_from"), MSG_VARIANT_FROM_AND_COLUMN.format(
                column=system.columns["variant"]), key=True))
        if system.decimal is not None and system.decimal == system.thousands:
            out.append(ls.issue(("systems", i, "thousands"), MSG_DECIMAL_THOUSANDS.format(mark=system.decimal)))
        if system.decimal is not None and system.decimal == system.delimiter:
            out.append(ls.issue(("systems", i, "decimal"), MSG_DECIMAL_IS_DELIMITER.format(mark=system.decimal)))
        return out

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        # columns, delimiter and blind only when written, so the digests of earlier specs do not change
        extra = {k: v for k, v in (("columns", system.columns), ("delimiter", system.delimiter)) if v is not None}
        extra |= {k: getattr(system, k) for k in MAPPING_KEYS if getattr(system, k) is not None}  # issue 37 §1
        if system.blind:  # returned after the lock: its digest goes into the signed run (run.json blind_scoring)
            return {"id": system.id, "kind": system.kind, "blind": True, "data": {"path": system.path},
                    "score_range": list(system.score_range), **score_resolution(system), **extra}
        return {"id": system.id, "kind": system.kind, "data": file_ref(ls.folder, system.path),
                "score_range": list(system.score_range), **score_resolution(system), **extra}

    def data_issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        """Every problem of the score file itself (issue 15: before the lock, all at once, each naming
        its CSV lines); a file that cannot be found is reported by :func:`compiler.validate.validate`.
        A blind file is read back through the export's key at execute."""
        if system.blind:
            return []
        found = read_system_file(ls, i, system)
        if found is None:
            return []
        out = []
        for n, msg in enumerate(found.problems):
            where = found.where.get(n)
            if where is not None and _written(ls, ("systems", i, *where)):
                out.append(ls.issue(("systems", i, *where), f"{system.path}: {msg}"))
            else:
                out.append(ls.issue(("systems", i, "path"), f"{system.path}: {msg}"))
        return out

    def advisories(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        if system.blind:
            return []
        found = read_system_file(ls, i, system)
        return [] if found is None or found.problems else [
            ls.issue(("systems", i, "path"), f"{system.path}: {msg}") for msg in found.warnings]

    def fingerprint(self, resolved: dict[str, Any]) -> dict[str, str]:
        if resolved.get("blind"):
            return {"algorithm": "sha256", "digest": BLIND_FINGERPRINT}
        return resolved.get("fingerprint") or {"algorithm": "sha256", "digest": resolved["data"]["sha256"]}



    def source(self, resolved: dict[str, Any]) -> str:
        """The score file."""
        return f"scores from {resolved['data']['path']}"
