"""Compiler declarations of the ``keyword_overlap`` plug-in: its system kind and its audit family."""

from __future__ import annotations

from typing import Any

from compiler.families.base import PAIRED, UNPAIRED, Family, family
from compiler.load import LoadedSpec
from compiler.registry import Needs
from compiler.systems.base import CORE, Requires, SystemKind, system_kind

from keyword_overlap import ID, RULE, fingerprint
from keyword_overlap import blocks as block


@system_kind
class KeywordOverlapKind(SystemKind):
    """The share of the job's distinct words found in the résumé (:data:`keyword_overlap.RULE`);
    fingerprint: sha256 of the rule's version string. Scores text (needs a generator and job texts),
    provides nothing beyond the design, needs only the core install."""

    id = ID
    model = block.System

    def requires(self, system: Any) -> Requires:
        """The core install: the rule is a few lines of Python."""
        return CORE

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        return {"id": system.id, "kind": system.kind, "rule": RULE, "fingerprint": fingerprint(),
                "score_range": list(system.score_range)}

    def source(self, resolved: dict[str, Any]) -> str:
        """The rule's version (``keyword_overlap/1``)."""
        return resolved["rule"].split(":", 1)[0]


@family
class KeywordOverlapFamily(Family):
    """The spread of every system's scores (``analysis.keyword_overlap``; enabled when written).
    Needs paired candidates or unpaired profiles: it reads the scores, whatever the design."""

    id = ID
    order = 70
    needs = Needs.of(PAIRED) | Needs.of(UNPAIRED)
    key = block.KEY
