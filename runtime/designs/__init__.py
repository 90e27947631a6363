"""Designs: how a run gets its candidates (``candidates.generator`` in the spec), registered by id.

A design generates the candidates the systems score and says what it provides to the audit
families: ``paired`` (a correspondence-audit matrix: every base candidate under every variant) or
``unpaired`` (population profiles, seed 001). The compiler side (``compiler.designs``) checks the
same ids. Generators themselves live in :mod:`runtime.generate`; a design adapter calls them and
writes their artifacts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from compiler.designs import SCORE_FILE, design_id
from compiler.designs.base import registry as declarations
from compiler.registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from runtime.run.context import RunContext


class Design:
    """Base class of a design's runtime half; subclasses bind to their declaration
    (:class:`compiler.designs.base.Design`) with ``@design("id")``, which sets :attr:`id` and
    :attr:`declaration`.

    Attributes
    ----------
    id : str
        ``candidates.generator`` of the spec, or :data:`SCORE_FILE`.
    declaration : compiler.designs.base.Design
        The compiler declaration; :attr:`provides` reads it.
    report_kind : str
        What the report calls itself under its title.
    section_headings : tuple of str
        The section headings of the résumés the design writes, each on a line of its own (passed to the
        systems: :attr:`runtime.systems.base.ScoreRequest.headings`); empty when it does not fix them.
    """

    id: ClassVar[str] = ""
    declaration: ClassVar[Any] = None
    #: The report's kind, under its title.
    report_kind: ClassVar[str] = "Correspondence audit report"
    #: The section headings of its résumés (issue 31 §5), in layout order.
    section_headings: ClassVar[tuple[str, ...]] = ()
    #: Whether the generated candidates are kept in the task store and reused (``restore``).
    storable: ClassVar[bool] = False

    @property
    def provides(self) -> frozenset[str]:
        """What the design provides (its declaration's)."""
        return frozenset(self.declaration.provides)

    def generate(self, ctx: "RunContext") -> None:  # pragma: no cover - interface
        """Set ``ctx.candidates`` and write the design's artifacts into the run folder."""
        raise NotImplementedError

    def restore(self, ctx: "RunContext") -> None:
        """Write the design's artifacts from ``ctx.candidates`` taken from the task store (storable
        designs only)."""
        raise NotImplementedError

    def generate_controls(self, ctx: "RunContext") -> None:
        """Set ``ctx.control_candidates``, the placebo résumés of ``variants.negative_controls``, and write
        them (``control_resumes.csv``; issue 38 §3). Default: each reference résumé of ``ctx.candidates``
        under the control's text-level perturbation (:func:`placebo_resumes`, the llm design's); None without
        generated résumés (a score file brings its placebo rows).

        Raises
        ------
        compiler.errors.AuditError
            ``regenerate``, which needs the generator's own calls (the llm design makes it with its matrix).
        """
        controls = ctx.resolved["variants"].get("negative_controls")
        if ctx.resolved["variants"].get("positive_controls") and ctx.candidates is not None:
            from compiler.errors import AuditError  # refused at validate: the llm design makes none (issue 39 §6)

            raise AuditError("positive controls are made by the template generator only")
        if not controls or ctx.candidates is None:
            ctx.control_candidates = None
            return
        ctx.control_candidates = placebo_resumes(ctx.candidates, controls,
                                                 reference=ctx.resolved["variants"]["reference"],
                                                 seed=ctx.resolved["seed"])
        ctx.folder.write_csv("control_resumes.csv", ctx.control_candidates)


#: A generated résumé that a control's text edit cannot change (the generator wrote no bullet lines).
MSG_CANNOT_PERTURB = ("negative control {id!r} ({p}): {why}; the generator's résumés must hold bullet lines for "
                      "this perturbation: use regenerate, date_format or bullet_glyph instead")


def placebo_resumes(candidates, controls: list[dict], *, reference: str, seed: int, regenerated=None):
    """The placebo résumés of a generated matrix (issue 38 §3): for each reference résumé of ``candidates``
    and each control, in that order, the résumé under the control's text-level perturbation
    (:func:`runtime.generate.perturb.perturb_text`, seeded by (job, cv_id, control id)), or for
    ``regenerate`` the reference résumé the generator wrote again (``regenerated``: ``job_id, cv_id, variant,
    text`` rows, ``variant`` = the control id; :class:`runtime.generate.llm.LlmMatrix`).

    Returns
    -------
    pandas.DataFrame
        :data:`runtime.generate.matrix.CONTROL_COLUMNS`, ``variant`` = the control's id.

    Raises
    ------
    compiler.errors.AuditError
        A ``regenerate`` control without its regenerated résumé (a design that does not write them); a
        text edit the résumé cannot take (``typos`` on a résumé without bullet lines: :data:`MSG_CANNOT_PERTURB`).
    """
    import pandas as pd

    from compiler.errors import AuditError
    from runtime.generate.matrix import CONTROL_COLUMNS
    from runtime.generate.perturb import perturb_text

    again: dict = {}
    if regenerated is not None:
        again = dict(zip(zip(regenerated["job_id"], regenerated["cv_id"], regenerated["variant"]),
                         regenerated["text"]))
    ref = candidates[candidates["variant"] == reference]
    rows = []
    for r in ref.itertuples():
        for c in controls:
            p = c["perturbation"]
            if p == "regenerate":
                text = again.get((r.job_id, r.cv_id, c["id"]))
                if text is None:
                    raise AuditError(f"negative control {c['id']!r} (regenerate): no regenerated résumé for "
                                     f"{r.job_id}/{r.cv_id}; only the llm generator writes the base again")
            else:
                try:
                    text = perturb_text(r.text, p, seed=seed, job_id=r.job_id, cv_id=r.cv_id, control_id=c["id"])
                except ValueError as err:  # typos on a résumé the generator wrote without bullet lines
                    raise AuditError(MSG_CANNOT_PERTURB.format(id=c["id"], p=p, why=err)) from None
            rows.append({"job_id": r.job_id, "cv_id": r.cv_id, "variant": c["id"], "perturbation": p,
                         "is_true_match": r.is_true_match, "text": text})
    return pd.DataFrame(rows, columns=list(CONTROL_COLUMNS))


_DESIGNS: Registry[type[Design]] = Registry("design half", __name__, side="runtime", skip=())

#: Class decorator binding a design's runtime half to its declaration: ``@design("template")``.
design = _DESIGNS.binder(declarations())


def registered() -> dict[str, type[Design]]:
    """Design id -> runtime half, after importing every module of this package and of the installed
    plug-ins.

    Raises
    ------
    compiler.registry.PluginError
        A declared design has no runtime half.
    """
    halves = _DESIGNS.load()
    _DESIGNS.check_halves(declarations())
    return halves


def design_for(resolved: dict[str, Any]) -> Design:
    """The design adapter of a resolved spec.

    Raises
    ------
    KeyError
        When no adapter is registered for the spec's generator (a bug: the compiler checks it).
    """
    registered()
    return _DESIGNS.get(design_id(resolved))()


__all__ = ["Design", "SCORE_FILE", "design", "design_for", "design_id", "placebo_resumes", "registered"]
