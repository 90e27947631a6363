"""The extras a spec needs: one issue per part of the spec (its design, each system) whose optional
modules (``pip install 'audit-compiler[embedding]'``, ``[llm]``) are not installed, found with
:func:`compiler.systems.find_module`, nothing imported.

Validation reports them with every other problem (``stage="resolve"``: what validate, compile and
``verify --spec`` need); ``audit execute`` checks every module the run imports before any work
(``stage="execute"``).
"""

from __future__ import annotations

from compiler.designs import Parts, parts_of
from compiler.errors import Finding, Issue
from compiler.load import LoadedSpec
from compiler.systems import MissingExtra, Stage, missing_modules

__all__ = ["check_extras", "extra_findings", "extra_issues"]


def extra_findings(ls: LoadedSpec, parts: Parts, stage: Stage) -> list[Finding]:
    """What :func:`extra_issues` finds, not yet located (:meth:`compiler.load.LoadedSpec.locate`)."""
    out = []
    design = parts.design.requires
    if missing_modules(design, stage):
        out.append(Finding(("candidates", "generator"), design.message()))
    for i, s in enumerate(ls.spec.systems):
        req = parts.kinds[i].requires(s)
        if missing_modules(req, stage):
            out.append(Finding(("systems", i, "kind"), req.message()))
    return out


def extra_issues(ls: LoadedSpec, stage: Stage = "resolve", parts: Parts | None = None) -> list[Issue]:
    """One issue per part of the spec (its design, each system) whose extra is not installed: the modules
    resolution needs (``stage="resolve"``: validate, compile, ``verify --spec``) or all it needs
    (``stage="execute"``). ``parts``: the spec's, when the caller has looked them up
    (:func:`compiler.designs.parts_of`)."""
    found = extra_findings(ls, parts or parts_of(ls), stage)
    return ls.locate(found)


def check_extras(ls: LoadedSpec, stage: Stage = "execute", parts: Parts | None = None) -> None:
    """Raise :class:`~compiler.systems.MissingExtra` when a part of the spec needs a module of an extra
    that is not installed (``audit execute`` calls it before any work with ``stage="execute"``)."""
    issues = extra_issues(ls, stage, parts)
    if issues:
        raise MissingExtra(issues)
