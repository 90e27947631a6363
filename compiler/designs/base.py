"""The declaration of a design: how a run gets its candidates (``candidates.generator``), declared
once here with its id, run-independent order and what it provides (issue 28 §1). Its runtime half
(``runtime.designs``) binds to it by id and reads it.

Subclass :class:`Design` (or :class:`compiler.designs.matrix.MatrixDesign` for a correspondence-audit
matrix), set :attr:`Design.id`, :attr:`Design.order` and :attr:`Design.provides`, override what differs
and decorate with :func:`design`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from compiler.errors import Issue
from compiler.llm import Estimate
from compiler.load import LoadedSpec
from compiler.registry import Registry
from compiler.systems import CORE, Requires


class Design:
    """Base class of a design's declaration.

    Attributes
    ----------
    id : str
        ``candidates.generator`` of the spec (``score_file``: a spec without ``candidates``).
    order : int
        Its place in lists shown to users (``audit init``), lower first.
    provides : frozenset of str
        What it gives the audit families: ``paired`` (every base candidate under every variant) or
        ``unpaired`` (population profiles), ``tool_text`` (the tool wrote the text the systems scored:
        the score change between variants can be a confound of the injection, seed 000 §3.1.2),
        ``llm_generation`` (LLM agents wrote it).
    requires : Requires
        Modules beyond the core install (default: none).
    """

    id: ClassVar[str] = ""
    order: ClassVar[int] = 100
    provides: ClassVar[frozenset[str]] = frozenset()
    requires: ClassVar[Requires] = CORE

    def issues(self, ls: LoadedSpec) -> list[Issue]:
        """Checks of its spec block (located issues). Default: none."""
        return []

    def advisories(self, ls: LoadedSpec) -> list[Issue]:
        """Legal but probably unintended content (printed as warnings). Default: none."""
        return []

    def resolve_matrix(self, ls: LoadedSpec) -> dict[str, Any]:
        """The resolved ``axes`` and ``variants``."""
        raise NotImplementedError(f"design {self.id!r} declares no resolve_matrix()")

    def resolve_candidates(self, ls: LoadedSpec) -> dict[str, Any] | None:
        """The resolved ``candidates`` block."""
        raise NotImplementedError(f"design {self.id!r} declares no resolve_candidates()")

    def plan_tasks(self, resolved: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
        """(its plan tasks, job id -> the task ids a job's score tasks depend on)."""
        raise NotImplementedError(f"design {self.id!r} declares no plan_tasks()")

    def size(self, resolved: dict[str, Any], base_per_job: dict[str, int] | None = None) -> dict[str, Any]:
        """``{base_candidates, variants, resumes, paired_candidates_per_variant[, profiles]}``."""
        raise NotImplementedError(f"design {self.id!r} declares no size()")

    def batching(self, resolved: dict[str, Any]) -> tuple[int | None, int]:
        """(base candidates per job or None when unknown, résumés per base candidate) for score batches."""
        raise NotImplementedError(f"design {self.id!r} declares no batching()")

    def estimate(self, resolved: dict[str, Any], est: Estimate) -> None:
        """Add its model calls to the compile-time LLM estimate. Default: none."""

    def base_per_job(self, ls: LoadedSpec) -> dict[str, int] | None:
        """K per job known at compile time from data files (the score-file case), else None."""
        return None


_REGISTRY: Registry[Design] = Registry("design", "compiler.designs", skip=("base", "matrix"))

#: Class decorator registering a design's declaration (an instance of the class, by its ``id``).
design = _REGISTRY.declare


def registry() -> Registry[Design]:
    """The registry of design declarations (the runtime binds its halves to it)."""
    return _REGISTRY
