"""Systems under test at compile time: one declaration per ``systems[].kind`` (checks, resolution,
fingerprint, what it provides, its share of the plan's counts and LLM estimate).

Each kind is declared once, here, by a :class:`~compiler.systems.base.SystemKind` registered with
:func:`~compiler.systems.base.system_kind` (``embedding``, ``precomputed``, ``llm_score``,
``llm_compare``, ``http``, ``applicant_file``, ``command``, ``python``; an installed plug-in declares its own in its ``compiler`` module). Its spec model is
a module of :mod:`compiler.blocks`; the runtime's adapter binds to the declaration
(``runtime.systems``). Adding a kind adds those files; nothing else in the compiler branches on a kind.

What a kind provides is a set drawn from ``{"answers"}``: answers read by the one reader (an LLM screener's, an
API's, a program's), which the
``llm_validity`` audit family checks (seed 003 §3.7).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from compiler.registry import PluginError
from compiler.spec import SYSTEM_KINDS
from compiler.systems.base import (CORE, MSG_NEEDS_EXTRA, MSG_RESOLUTION, MSG_SCORE_RANGE, SYSTEM_KINDS_REGISTRY,
                                   FileRef, MissingExtra, MissingModule, Requires, Stage, SystemKind, file_ref,
                                   find_module, missing_modules, score_resolution, system_kind)
# the built-in kinds, imported in their order (the registry keeps it)
from compiler.systems.embedding import (DEFAULT_EMBEDDING_NAME, DEFAULT_EMBEDDING_PACKAGE, MSG_NO_DEFAULT_MODEL,
                                        Embedding, model_fingerprint, model_fingerprints, packaged_model_dir)
from compiler.systems.precomputed import (BLIND_FINGERPRINT, MSG_BLIND_COLUMNS, MSG_BLIND_DESIGN, Precomputed,
                                          read_system_file)
from compiler.systems.llm import (LLM_MODULES, MSG_BAD_TEMPLATE, MSG_DUP_CONDITION, MSG_REFERENCE_JOB,
                                  MSG_REFERENCE_NEEDED, LlmCompare, LlmScore, LlmScreener)
from compiler.systems.http import Http, http_fingerprint
from compiler.systems.applicant_file import ApplicantFile, read_applicants
from compiler.systems.command import Command, command_fingerprint
from compiler.systems.python_function import Python, python_fingerprint
from compiler.systems.lexical import Lexical

MSG_UNDECLARED = ("system kind {kind!r} has a spec model but no compiler declaration (declared: {known}); "
                  "its plug-in's compiler module is missing or failed to import")


class _Declared(Mapping[str, SystemKind]):
    """Kind -> declaration, read from :data:`SYSTEM_KINDS_REGISTRY` at each use (so that the kinds
    of installed plug-ins, registered when they are first loaded, are in it)."""

    def __getitem__(self, kind: str) -> SystemKind:
        return SYSTEM_KINDS_REGISTRY.load()[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(SYSTEM_KINDS_REGISTRY.load())

    def __len__(self) -> int:
        return len(SYSTEM_KINDS_REGISTRY.load())

    def __repr__(self) -> str:
        return f"SYSTEMS({', '.join(self)})"


#: Kind -> declaration (:class:`~compiler.systems.base.SystemKind`), in registration order: the
#: built-in kinds, then those of installed plug-ins.
SYSTEMS: Mapping[str, SystemKind] = _Declared()


def hook_for(kind: str) -> SystemKind:
    """The declaration of a system kind.

    Raises
    ------
    KeyError
        For a kind the spec models do not allow (validation refuses it first).
    compiler.registry.PluginError
        For a kind a plug-in gives a spec model but no declaration (exit 1).
    """
    declared = SYSTEM_KINDS_REGISTRY.load()
    if kind not in declared and kind in SYSTEM_KINDS:
        raise PluginError(MSG_UNDECLARED.format(kind=kind, known=", ".join(declared)))
    return declared[kind]


class Undeclared:
    """The stand-in of a kind that has a spec model but no declaration (its plug-in's compiler module is
    missing or failed to import): validation refuses it, located (:func:`compiler.validate.undeclared_issues`),
    before it reads any declaration; whatever else asks it anything gets :func:`hook_for`'s
    :class:`~compiler.registry.PluginError` (exit 1)."""

    def __init__(self, kind: str):
        self.kind = kind

    def __getattr__(self, name: str) -> Any:
        raise PluginError(MSG_UNDECLARED.format(kind=self.kind, known=", ".join(SYSTEM_KINDS_REGISTRY.load())))


def kinds_of(systems: list[Any]) -> tuple[SystemKind, ...]:
    """The declaration of each system's kind (spec models or resolved dicts), in order, looked up once
    (:class:`Undeclared` for a kind that has a spec model but no declaration)."""
    declared = SYSTEM_KINDS_REGISTRY.load()
    kinds = [s["kind"] if isinstance(s, dict) else s.kind for s in systems]
    return tuple(declared[k] if k in declared else Undeclared(k) for k in kinds)


__all__ = [
    "ApplicantFile", "read_applicants", "Command", "command_fingerprint", "Python", "python_fingerprint", "BLIND_FINGERPRINT", "CORE", "DEFAULT_EMBEDDING_NAME", "DEFAULT_EMBEDDING_PACKAGE", "LLM_MODULES",
    "MSG_BAD_TEMPLATE", "MSG_BLIND_COLUMNS", "MSG_BLIND_DESIGN", "MSG_DUP_CONDITION", "MSG_NEEDS_EXTRA",
    "MSG_NO_DEFAULT_MODEL", "MSG_REFERENCE_JOB", "MSG_REFERENCE_NEEDED", "MSG_RESOLUTION", "MSG_SCORE_RANGE",
    "MSG_UNDECLARED", "SYSTEMS", "SYSTEM_KINDS_REGISTRY", "Undeclared", "Embedding", "FileRef", "Http", "Lexical", "http_fingerprint", "LlmCompare", "LlmScore",
    "LlmScreener", "MissingExtra", "MissingModule", "Precomputed", "Requires", "Stage", "SystemKind", "file_ref",
    "find_module", "hook_for", "kinds_of", "missing_modules", "model_fingerprint", "model_fingerprints", "packaged_model_dir",
    "read_system_file", "score_resolution", "system_kind",
]
