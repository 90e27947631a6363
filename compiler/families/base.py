"""The declaration of an audit family: the one place its id, run order, needs and spec block are
written (issue 28 §1). Its runtime half (``runtime.families``) binds to it by id and reads it.

A family is a named unit of analysis (``metric_suite`` = seed 000's nine metrics, ``effects`` = seed
003's effect sizes and validity protocol, ``llm_validity``, ``causal`` = seed 001's path-specific
effects, ``descriptives``). Subclass :class:`Family`, set :attr:`Family.id`, :attr:`Family.order` and
:attr:`Family.needs`, override what differs, and decorate with :func:`family`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from compiler.errors import Issue
from compiler.load import LoadedSpec
from compiler.designs import provided
from compiler.registry import ANSWERS, LLM_GENERATION, PAIRED, TOOL_TEXT, UNPAIRED, Needs, Registry

__all__ = ["ANSWERS", "Family", "LLM_GENERATION", "PAIRED", "TOOL_TEXT", "UNPAIRED", "Needs", "family",
           "provided", "registry"]


class Family:
    """Base class of an audit family's declaration.

    Attributes
    ----------
    id : str
        The family's id (its runtime half binds to it; ``run.json``, the status rows and the report name it).
    order : int
        Run order, lower first (ties by id).
    needs : Needs
        What the design and systems must provide (any one alternative); a spec that writes the
        family's block without it is refused at the block (exit 2).
    after : tuple of str
        Families whose results this one reads; each must run before it (checked at load).
    key : str or None
        Its ``analysis.<key>`` spec block when it has one of its own (:mod:`compiler.blocks`); the
        defaults of :meth:`block`, :meth:`enabled` and :meth:`resolve` read it.
    """

    id: ClassVar[str] = ""
    order: ClassVar[int] = 100
    needs: ClassVar[Needs] = Needs.of()
    after: ClassVar[tuple[str, ...]] = ()
    key: ClassVar[str | None] = None

    def block(self, spec: Any) -> list[tuple]:
        """Key paths of the family's spec block that ``spec`` (an :class:`~compiler.spec.AuditSpec`)
        writes; where a refusal is located. Default: ``analysis.<key>`` when written."""
        if self.key is None or getattr(spec.analysis, self.key, None) is None:
            return []
        return [("analysis", self.key)]

    def enabled(self, resolved: dict[str, Any]) -> bool:
        """Whether the resolved spec asks for the family (its one enable rule; :meth:`runs` adds its needs).
        Default: the resolved ``analysis`` holds its block."""
        return self.key is not None and self.key in resolved["analysis"]

    def runs(self, resolved: dict[str, Any]) -> bool:
        """Whether a run of ``resolved`` runs the family: enabled, and given what it needs."""
        return self.enabled(resolved) and self.needs.met(provided(resolved))

    def issues(self, ls: LoadedSpec) -> list[Issue]:
        """Its checks (located issues); run when the design and systems meet its needs. Default: none."""
        return []

    def resolve(self, ls: LoadedSpec, resolved: dict[str, Any]) -> None:
        """Write its resolution into ``resolved``, in place. Default: ``analysis.<key>`` with its defaults
        explicit, absent when not written (the digests of other specs do not change)."""
        if self.key is not None:
            block = getattr(ls.spec.analysis, self.key, None)
            if block is not None:
                resolved["analysis"][self.key] = block.model_dump()

    def plan_tasks(self, resolved: dict[str, Any], score_ids: list[str]) -> list[dict[str, Any]]:
        """Its plan tasks (they depend on the score tasks). Default: none (computed inside another task)."""
        return []

    def metric_rows(self, resolved: dict[str, Any]) -> int:
        """Its rows of ``metrics.csv`` (the plan's ``counts.metric_rows``). Default: 0."""
        return 0

    def summary(self, resolved: dict[str, Any], size: dict[str, Any] | None = None) -> dict[str, Any]:
        """Plan keys of its compile-time summary (``size``: the design's size). Default: none."""
        return {}


_REGISTRY: Registry[Family] = Registry("audit family", "compiler.families")

#: Class decorator registering a family's declaration (an instance of the class, by its ``id``).
family = _REGISTRY.declare


def registry() -> Registry[Family]:
    """The registry of family declarations (the runtime binds its halves to it)."""
    return _REGISTRY

