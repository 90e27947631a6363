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
    from compiler.score_file import read_score_file
    from compiler.variants import variant_table

    path, err = resolve_inside(ls.folder, system.path)
    lo, hi = system.score_range
    if err is not None or not lo < hi:
        return None
    cand = ls.spec.candidates
    if cand is not None and cand.generator == "population":  # profile ids exist only once generated
        return None
    variants = list(variant_table(ls.spec)) if ls.spec.axes else None
    controls = tuple(c.id for c in ls.spec.variants.negative_controls or ()) if cand is None else ()
    # K is checked against the file for a top-K rule; under a threshold no shortlist must be filled
    k = ls.spec.analysis.shortlist() if cand is None and not ls.spec.analysis.selects_by_threshold() else None
    jobs = [j.id for j in ls.spec.jobs]
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, tuple(jobs), tuple(variants or ()), (lo, hi),
           tuple(sorted((system.columns or {}).items())), system.delimiter, tuple(sorted((k or {}).items())), i, controls)
    if key not in _READ_CACHE:
        if len(_READ_CACHE) >= 16:
            _READ_CACHE.clear()
        _READ_CACHE[key] = read_score_file(path, jobs=jobs, variants=variants, score_range=(lo, hi),
                                           columns=system.columns, delimiter=system.delimiter, k=k,
                                           key=f"systems[{i}]", controls=controls)
    return _READ_CACHE[key]


#: Score files already read in this process, by (path, mtime, size, what the spec asks of them).
_READ_CACHE: dict[tuple, Any] = {}


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
        return out

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        # columns, delimiter and blind only when written, so the digests of earlier specs do not change
        extra = {k: v for k, v in (("columns", system.columns), ("delimiter", system.delimiter)) if v is not None}
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
        return [] if found is None else [ls.issue(("systems", i, "path"), f"{system.path}: {msg}")
                                         for msg in found.problems]

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
