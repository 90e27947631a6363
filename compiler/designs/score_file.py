"""The score-file case (no ``candidates``, every system ``precomputed``): nothing is generated; the
vendor's export holds one score per base candidate and variant. Provides paired candidates; K per
job is counted from the score files at run time."""

from __future__ import annotations

from typing import Any

from compiler.designs import matrix
from compiler.errors import Issue
from compiler.llm import Estimate
from compiler.load import LoadedSpec
from compiler.systems import hook_for

ID = "score_file"
PROVIDES = matrix.PROVIDES

MSG_NO_CANDIDATES = "candidates is required when a system is not precomputed (systems: {systems})"


def issues(ls: LoadedSpec) -> list[Issue]:
    """The matrix checks; every system reads its scores from a file (else a generator is needed)."""
    out = matrix.matrix_issues(ls)
    needs_text = [s.id for s in ls.spec.systems if hook_for(s.kind).needs_text]
    if needs_text:
        out.append(ls.issue(("candidates",), MSG_NO_CANDIDATES.format(systems=", ".join(needs_text))))
    return out


def advisories(ls: LoadedSpec) -> list[Issue]:
    return []


resolve_matrix = matrix.resolve_matrix
plan_tasks = matrix.plan_tasks
size = matrix.size
batching = matrix.batching


def resolve_candidates(ls: LoadedSpec) -> None:
    """No candidates block: resolved as null."""
    return None


def estimate(resolved: dict[str, Any], est: Estimate) -> None:
    """Nothing is generated."""
