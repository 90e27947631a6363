"""The ``applicant_file`` system kind: the employer's historical applicants of the tool (issue 34),
read from a CSV; fingerprint: the file's sha256 (the lock holds it, never a row). Its spec model:
:mod:`compiler.blocks.applicant_file`; its reader: :mod:`compiler.applicants`."""

from __future__ import annotations

from typing import Any

from compiler.blocks import applicant_file as block
from compiler.errors import Issue
from compiler.load import LoadedSpec
from compiler.paths import resolve_inside
from compiler.systems.base import CORE, MSG_SCORE_RANGE, FileRef, Requires, SystemKind, file_ref, system_kind

MSG_NO_RANGE = "outcome: score needs score_range: [low, high] (the scale of the tool's scores)"
MSG_RANGE_UNUSED = "score_range is read with outcome: score only; remove it (outcome: selected)"
MSG_COLUMN_UNUSED = "columns.{col} is read with outcome: {other} only (outcome: {outcome})"


def data_range(ls: LoadedSpec) -> tuple[Any, Any] | None:
    """``(disclosure.data.from, disclosure.data.to)`` when both are written, else None."""
    d = ls.spec.disclosure
    data = d.data if d is not None else None
    if data is None or data.from_ is None or data.to is None:
        return None
    return data.from_, data.to


def read_applicants(ls: LoadedSpec, i: int, system: Any):
    """The checked applicant file of ``systems[i]`` (:func:`compiler.applicants.read_applicant_file`), or None
    when its path does not resolve (reported elsewhere)."""
    from compiler.applicants import read_applicant_file

    path, err = resolve_inside(ls.folder, system.path)
    if err is not None:
        return None
    rng = tuple(system.score_range) if system.score_range is not None else None
    return read_applicant_file(path, outcome=system.outcome, labels=system.labels.model_dump(), score_range=rng,
                               columns=system.columns, delimiter=system.delimiter, dates=data_range(ls))


@system_kind
class ApplicantFile(SystemKind):
    """Historical applicants of the tool (sex, race/ethnicity, outcome per person), read in memory only."""

    id = "applicant_file"
    needs_text = False
    model = block.System

    def requires(self, system: Any) -> Requires:
        """A CSV needs the core install only."""
        return CORE

    def files(self, i: int, system: Any) -> list[FileRef]:
        return [(("systems", i, "path"), system.path, "file")]

    def issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        """``score_range`` with ``outcome: score`` (and only then), in order; no column of the other outcome."""
        out: list[Issue] = []
        if system.outcome == "score":
            if system.score_range is None:
                out.append(ls.issue(("systems", i, "outcome"), MSG_NO_RANGE))
            elif not system.score_range[0] < system.score_range[1]:
                out.append(ls.issue(("systems", i, "score_range"), MSG_SCORE_RANGE.format(
                    rng=list(system.score_range))))
        elif system.score_range is not None:
            out.append(ls.issue(("systems", i, "score_range"), MSG_RANGE_UNUSED, key=True))
        other = "score" if system.outcome == "selected" else "selected"
        if system.columns and other in system.columns:
            out.append(ls.issue(("systems", i, "columns", other), MSG_COLUMN_UNUSED.format(
                col=other, other=other, outcome=system.outcome), key=True))
        return out

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        """The system with the file's sha256 (never a row) and its labels; the range only with scores."""
        out = {"id": system.id, "kind": system.kind, "data": file_ref(ls.folder, system.path),
               "outcome": system.outcome, "labels": system.labels.model_dump(),
               "retention_days": system.retention_days}
        if system.score_range is not None:
            out["score_range"] = list(system.score_range)
        else:  # a selection is 1 or 0: the analyses read a 0-1 scale
            out["score_range"] = [0.0, 1.0]
        for key in ("columns", "delimiter"):
            if getattr(system, key) is not None:
                out[key] = getattr(system, key)
        return out

    def fingerprint(self, resolved: dict[str, Any]) -> dict[str, str]:
        return {"algorithm": "sha256", "digest": resolved["data"]["sha256"]}

    def source(self, resolved: dict[str, Any]) -> str:
        """The applicant file."""
        return f"historical applicants from {resolved['data']['path']}"

    def data_issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        """Every problem of the file, at once, each naming its CSV lines (header = 1)."""
        if system.outcome == "score" and (system.score_range is None
                                          or not system.score_range[0] < system.score_range[1]):
            return []
        found = read_applicants(ls, i, system)
        return [] if found is None else [ls.issue(("systems", i, "path"), f"{system.path}: {msg}")
                                         for msg in found.problems]
