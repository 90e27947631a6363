"""``keyword_overlap``: a plug-in of audit-compiler that lives only in its own files (issue 28).

It adds two plug-ins, each declared once on the compiler side and bound by its runtime half:

- the **system kind** ``keyword_overlap`` (``systems[i]: {id, kind: keyword_overlap}``): a toy résumé
  matcher whose score is the share of the job description's distinct words found in the résumé
  (:func:`overlap`, rule :data:`RULE`);
- the **audit family** ``keyword_overlap`` (``analysis.keyword_overlap: {min_spread}``): the spread of
  each system's scores; INCONCLUSIVE when a system's scores barely vary (a matcher that cannot
  separate candidates cannot show a difference between variants either). It runs on paired
  (correspondence audit) and unpaired (population) designs.

Modules, one per side (:func:`compiler.registry.plugin_modules`): :mod:`.blocks` (spec models),
:mod:`.compiler` (declarations), :mod:`.runtime` (adapter and family half). The distribution
``keyword-overlap`` (``tests/plugins/keyword_overlap-0.1.dist-info``) declares the package in the
entry-point group ``audit_compiler.plugins``; with ``tests/plugins`` on ``PYTHONPATH`` the registry
finds it. This module holds the scoring rule, shared by the sides, and imports nothing of the tool.
"""

from __future__ import annotations

import hashlib
import re

#: Version string of the scoring rule; its sha256 is the system's fingerprint in the lock.
RULE = ("keyword_overlap/1: words are the [a-z0-9]+ runs of the lowercased text (str.lower()); "
        "score = |distinct job words found among the resume's words| / |distinct job words|; 0 for a job without words")
#: The id shared by the system kind, the audit family and the spec block.
ID = "keyword_overlap"

_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> frozenset[str]:
    """The distinct words of ``text``: the maximal runs of ``[a-z0-9]`` in ``text.lower()`` (so
    punctuation, spaces and non-ASCII letters separate words; "Power-BI" gives ``power`` and ``bi``)."""
    return frozenset(_WORD.findall(text.lower()))


def overlap(job: str, resume: str) -> float:
    """Share of the job description's distinct words that the résumé contains, in [0, 1] (:data:`RULE`).

    Parameters
    ----------
    job : str
        The job description.
    resume : str
        The résumé's text.

    Returns
    -------
    float
        ``|words(job) & words(resume)| / |words(job)|``; 0.0 when the job has no words.
    """
    wanted = words(job)
    return len(wanted & words(resume)) / len(wanted) if wanted else 0.0


def fingerprint() -> dict[str, str]:
    """The system's fingerprint: sha256 of :data:`RULE` (a new rule is a new system)."""
    return {"algorithm": "sha256", "digest": hashlib.sha256(RULE.encode("utf-8")).hexdigest()}
