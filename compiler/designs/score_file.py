"""The score-file case (no ``candidates``, every system ``precomputed``): nothing is generated; the
vendor's export holds one score per base candidate and variant. Provides paired candidates; K per
job is counted from the score files at run time."""

from __future__ import annotations

from compiler.designs import matrix
from compiler.designs.base import design
from compiler.errors import Issue
from compiler.load import LoadedSpec
from compiler.registry import PAIRED
from compiler.systems import hook_for


MSG_NO_CANDIDATES = "candidates is required when a system is not precomputed (systems: {systems})"


@design
class ScoreFile(matrix.MatrixDesign):
    """No candidates: the vendor's export holds the scores; the tool wrote no text."""

    id = "score_file"
    order = 40
    provides = frozenset({PAIRED})

    def issues(self, ls: LoadedSpec) -> list[Issue]:
        """The matrix checks; every system reads its scores from a file (else a generator is needed)."""
        out = matrix.matrix_issues(ls)
        needs_text = [s.id for s in ls.spec.systems if hook_for(s.kind).needs_text]
        if needs_text:
            out.append(ls.issue(("candidates",), MSG_NO_CANDIDATES.format(systems=", ".join(needs_text))))
        return out

    def resolve_candidates(self, ls: LoadedSpec) -> None:
        """No candidates block: resolved as null."""
        return None

    def base_per_job(self, ls: LoadedSpec) -> dict[str, int] | None:
        """K per job counted from the score files (issue 15: the file fixes K, so compile can print the
        minimum detectable effects): the smallest count over the systems, so that the sensitivity is not
        overstated; None when a file cannot be read or has problems (validate reported them)."""
        from compiler.systems import read_system_file

        out: dict[str, int] = {}
        for i, s in enumerate(ls.spec.systems):
            found = read_system_file(ls, i, s) if s.kind == "precomputed" else None
            if found is None or found.problems:
                return None
            for job, n in found.base_per_job.items():
                out[job] = min(n, out.get(job, n))
        return out or None
