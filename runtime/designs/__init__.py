"""Designs: how a run gets its candidates (``candidates.generator`` in the spec), registered by id.

A design generates the candidates the systems score and says what it provides to the audit
families: ``paired`` (a correspondence-audit matrix: every base candidate under every variant) or
``unpaired`` (population profiles, seed 001). The compiler side (``compiler.designs``) checks the
same ids. Generators themselves live in :mod:`runtime.generate`; a design adapter calls them and
writes their artifacts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from runtime.registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from runtime.pipeline.context import RunContext

#: The design of a spec without ``candidates`` (a score-file audit: every system is precomputed).
SCORE_FILE = "score_file"


class Design:
    """Base class of a design adapter; subclasses register with ``@design("id")``.

    Attributes
    ----------
    id : str
        ``candidates.generator`` of the spec, or :data:`SCORE_FILE`.
    provides : frozenset of str
        ``{"paired"}`` or ``{"unpaired"}``.
    report_kind : str
        What the report calls itself under its title.
    """

    id: ClassVar[str] = ""
    provides: ClassVar[frozenset[str]] = frozenset()
    #: The report's kind, under its title.
    report_kind: ClassVar[str] = "Correspondence audit report"
    #: Whether the generated candidates are kept in the task store and reused (``restore``).
    storable: ClassVar[bool] = False

    def generate(self, ctx: "RunContext") -> None:  # pragma: no cover - interface
        """Set ``ctx.candidates`` and write the design's artifacts into the run folder."""
        raise NotImplementedError

    def restore(self, ctx: "RunContext") -> None:
        """Write the design's artifacts from ``ctx.candidates`` taken from the task store (storable
        designs only)."""
        raise NotImplementedError


_DESIGNS: Registry[type[Design]] = Registry("design", __name__)

#: Class decorator registering a design adapter: ``@design("template")``.
design = _DESIGNS.register


def registered() -> dict[str, type[Design]]:
    """Design id -> adapter class, after importing every module of this package."""
    return _DESIGNS.load()


def design_id(resolved: dict[str, Any]) -> str:
    """The design of a resolved spec: its generator, or :data:`SCORE_FILE` without candidates."""
    cand = resolved.get("candidates")
    return cand["generator"] if cand else SCORE_FILE


def design_for(resolved: dict[str, Any]) -> Design:
    """The design adapter of a resolved spec.

    Raises
    ------
    KeyError
        When no adapter is registered for the spec's generator (a bug: the compiler checks it).
    """
    return _DESIGNS.get(design_id(resolved))()


__all__ = ["Design", "SCORE_FILE", "design", "design_for", "design_id", "registered"]
