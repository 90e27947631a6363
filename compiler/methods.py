"""The methods version: one integer for the analysis methods (computations and defaults).

Bump :data:`METHODS_VERSION` and add an entry to :data:`CHANGES` whenever a computation or a default
changes a result (a BH family, a ranking mode, a bootstrap default...), and add the same line to the
"Methods versions" section of ``CHANGELOG.md`` (a test checks both list the same entries). The lock
records the methods version it was made under (``methods_version``; a lock without one, schema 1.0,
is version 1). ``audit execute`` refuses a lock of another methods version, and ``audit compile``
re-locks only with ``--amend --reason``, so that one spec digest never yields two conclusions
(DESIGN.md, "Methods version").
"""

from __future__ import annotations

#: The methods version this audit-compiler implements.
METHODS_VERSION = 1

#: Methods version -> what changed in it (version 1: the first implementation).
CHANGES: dict[int, str] = {
    1: "the methods of the seeds as first implemented",
}


def changes_between(old: int, new: int) -> list[tuple[int, str]]:
    """The changelog entries after ``old`` up to and including ``new`` (either order), oldest first."""
    lo, hi = sorted((old, new))
    return [(v, CHANGES.get(v, "(no changelog entry)")) for v in range(lo + 1, hi + 1)]
