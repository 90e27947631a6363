"""Designs: the generators of what the systems score (``template``, ``llm``, ``population``) and the
score-file case (no ``candidates``, every system ``precomputed``), one declaration each
(:class:`~compiler.designs.base.Design`, registered with ``@design``), found in this package's modules
and in installed plug-ins.

Each declaration owns its spec-block checks, its resolution of ``axes``/``variants`` and of
``candidates``, its plan tasks, size, score batching and model calls, and declares what it
**provides** (paired candidates or unpaired profiles, and capabilities such as ``tool_text``). The
audit families declare what they need; :mod:`compiler.validate` refuses a family whose needs the
design and systems cannot meet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from compiler.designs.base import Design, design, registry
from compiler.registry import ANSWERS, APPLICANTS, Declared, LLM_GENERATION, PAIRED, TOOL_TEXT, UNPAIRED
from compiler.systems import SystemKind, kinds_of

#: The design of a spec without ``candidates`` (a score-file audit: every system is precomputed).
SCORE_FILE = "score_file"
#: The design of a spec whose systems read historical applicants (``kind: applicant_file``; issue 34).
APPLICANTS_DESIGN = "applicants"
#: The system kind that reads an applicant file (its spec makes the design :data:`APPLICANTS_DESIGN`).
APPLICANT_FILE = "applicant_file"
#: The design of a ``candidates`` block that names no generator (specs written before the LLM generator).
DEFAULT_GENERATOR = "template"


def _in_order(declared: Iterable[Design]) -> dict[str, Design]:
    return {d.id: d for d in sorted(declared, key=lambda d: (d.order, d.id))}


#: The registry: design id -> declaration, in :attr:`Design.order` (read at each use: installed
#: plug-ins included).
DESIGNS: Mapping[str, Design] = Declared(registry(), _in_order)

#: How each thing a design or system provides (and a family needs) reads in a message.
PROVIDES_WORDS = {PAIRED: "paired candidates", UNPAIRED: "unpaired profiles", ANSWERS: "answers read from a system (an LLM screener, an API, a program)",
                  LLM_GENERATION: "LLM generation", TOOL_TEXT: "text the tool wrote",
                  APPLICANTS: "historical applicants"}


def design_id(spec_or_resolved: Any) -> str:
    """The design of a spec (:class:`~compiler.load.LoadedSpec`, :class:`~compiler.spec.AuditSpec`)
    or of a resolved spec dict: :data:`APPLICANTS_DESIGN` when a system reads an applicant file (its
    design refuses any other kind beside it), else ``candidates.generator``, :data:`SCORE_FILE` without
    candidates. The one place this rule is written (the runtime reads it too)."""
    if isinstance(spec_or_resolved, dict):
        if any(s.get("kind") == APPLICANT_FILE for s in spec_or_resolved.get("systems") or []):
            return APPLICANTS_DESIGN
        cand = spec_or_resolved.get("candidates")
        return SCORE_FILE if not cand else cand.get("generator", DEFAULT_GENERATOR)
    spec = getattr(spec_or_resolved, "spec", spec_or_resolved)
    if any(getattr(s, "kind", None) == APPLICANT_FILE for s in spec.systems):
        return APPLICANTS_DESIGN
    return SCORE_FILE if spec.candidates is None else spec.candidates.generator


def design_of(spec_or_resolved: Any) -> Design:
    """The design declaration of a spec or resolved spec (see :func:`design_id`)."""
    return DESIGNS[design_id(spec_or_resolved)]


@dataclass(frozen=True)
class Parts:
    """The declarations a spec is made of, looked up once (:func:`parts_of`): its design and the kind of
    each of its systems, in the spec's order (:func:`compiler.systems.kinds_of`)."""

    design: Design
    kinds: tuple[SystemKind, ...]

    @property
    def from_systems(self) -> frozenset[str]:
        """What the systems provide (the union of their kinds')."""
        return frozenset().union(*(k.provides for k in self.kinds))

    @property
    def provides(self) -> frozenset[str]:
        """What the design and the systems provide."""
        return frozenset(self.design.provides) | self.from_systems

    @property
    def needs_text(self) -> tuple[bool, ...]:
        """Whether each system scores a text the spec gives (a job description, a résumé)."""
        return tuple(k.needs_text for k in self.kinds)


def parts_of(spec_or_resolved: Any) -> Parts:
    """The design and system kinds of a spec (:class:`~compiler.load.LoadedSpec`,
    :class:`~compiler.spec.AuditSpec`) or of a resolved spec dict."""
    systems = spec_or_resolved["systems"] if isinstance(spec_or_resolved, dict) \
        else getattr(spec_or_resolved, "spec", spec_or_resolved).systems
    return Parts(design_of(spec_or_resolved), kinds_of(systems))


def provided(resolved: dict[str, Any]) -> frozenset[str]:
    """What the design and the systems of a resolved spec provide."""
    return parts_of(resolved).provides


__all__ = ["APPLICANTS_DESIGN", "APPLICANT_FILE", "DESIGNS", "Design", "PROVIDES_WORDS", "Parts", "SCORE_FILE", "design", "design_id", "design_of",
           "parts_of", "provided"]
