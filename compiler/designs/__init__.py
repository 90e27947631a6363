"""Designs: the generators of what the systems score (``template``, ``llm``, ``population``) and the
score-file case (no ``candidates``, every system ``precomputed``).

Each design module owns its spec-block checks (``issues``), its resolution of ``axes``/``variants``
(``resolve_matrix``) and of ``candidates`` (``resolve_candidates``), its plan tasks (``plan_tasks``),
its size (``size``: base candidates, variants, resumes), its score batching (``batching``: base
candidates per job and resumes per base candidate, for the plan's score batches), its model calls (``estimate``) and its
advisories, and declares what it **provides** (``PROVIDES``, drawn from ``{"paired", "unpaired"}``):
template, llm and score-file give paired candidates (the counterfactual matrix); population gives
unpaired profiles. The audit families declare what they need; :mod:`compiler.validate` refuses a
family whose needs the design and systems cannot meet.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from compiler.designs import llm, population, score_file, template

#: The registry: design id -> module.
DESIGNS: dict[str, ModuleType] = {m.ID: m for m in (template, llm, population, score_file)}

#: How each thing a design or system provides (and a family needs) reads in a message.
PROVIDES_WORDS = {"paired": "paired candidates", "unpaired": "unpaired profiles", "llm_answers": "LLM answers"}


def design_id(spec_or_resolved: Any) -> str:
    """The design of a spec (:class:`~compiler.load.LoadedSpec`, :class:`~compiler.spec.AuditSpec`)
    or of a resolved spec dict: ``candidates.generator``, ``score_file`` without candidates."""
    if isinstance(spec_or_resolved, dict):
        cand = spec_or_resolved.get("candidates")
        return score_file.ID if not cand else cand.get("generator", template.ID)
    spec = getattr(spec_or_resolved, "spec", spec_or_resolved)
    return score_file.ID if spec.candidates is None else spec.candidates.generator


def design_of(spec_or_resolved: Any) -> ModuleType:
    """The design module of a spec or resolved spec (see :func:`design_id`)."""
    return DESIGNS[design_id(spec_or_resolved)]
