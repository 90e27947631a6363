"""The compiler's declaration of a system kind (:class:`SystemKind`) and what every kind shares: the
modules of an optional extra it requires (:class:`Requires`), the checks of a score range, file
references, and the registry the kinds declare themselves in (:data:`SYSTEM_KINDS_REGISTRY`,
:func:`system_kind`).

What a kind **requires** (:meth:`SystemKind.requires`) are the Python modules of an optional extra
(``audit-compiler[embedding]``, ``audit-compiler[llm]``): those resolution needs are checked at validate
and compile (:func:`compiler.extras.extra_issues`), all of them at execute before any work. The core
install runs score-file audits and ``audit verify``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from compiler import llm
from compiler.errors import AuditError, Issue, SpecError
from compiler.hashing import file_digest
from compiler.load import LoadedSpec
from compiler.paths import resolve_inside
from compiler.registry import Registry
from compiler.spec import SYSTEM_MODELS

#: A system kind or design whose extra is not installed (located at ``systems[i].kind`` or
#: ``candidates.generator``; exit 2, before anything is written).
MSG_NEEDS_EXTRA = "the {what} needs the {extra} extra: pip install 'audit-compiler[{extra}]'"

#: When modules are checked: ``"resolve"`` (validate, compile, ``verify --spec``: what resolving the
#: spec imports or hashes) or ``"execute"`` (every module the run imports, before any work).
Stage = Literal["resolve", "execute"]


@dataclass(frozen=True)
class Requires:
    """Python modules a system kind or a design needs beyond the core install.

    Attributes
    ----------
    extra : str or None
        The extra of ``audit-compiler`` that installs them (None: the core install suffices).
    what : str
        How the message names the part (``"embedding matcher"``, ``"llm generator"``).
    resolve : tuple of str
        Import names resolution needs (checked at validate, compile and ``verify --spec``), e.g. the
        package that ships the default embedding model, whose files are hashed into the lock.
    execute : tuple of str
        Import names the run needs besides ``resolve`` (checked at execute, before any work).
    """

    extra: str | None = None
    what: str = ""
    resolve: tuple[str, ...] = ()
    execute: tuple[str, ...] = ()

    def modules(self, stage: Stage) -> tuple[str, ...]:
        """The import names checked at ``stage`` (``"execute"`` includes those of ``"resolve"``)."""
        return self.resolve if stage == "resolve" else tuple(dict.fromkeys(self.resolve + self.execute))

    def message(self) -> str:
        """:data:`MSG_NEEDS_EXTRA` for this part."""
        return MSG_NEEDS_EXTRA.format(what=self.what, extra=self.extra)


#: A part that needs nothing beyond the core install.
CORE = Requires()


class MissingExtra(SpecError):
    """A system kind or design of the spec needs an extra that is not installed (exit 2): one located
    issue per part, each naming the ``pip install`` that adds it. ``audit verify --spec`` stops on it
    (exit 2) instead of reporting a verification failure: the spec could not be checked here."""


class MissingModule(AuditError):
    """A module of an extra is missing where no spec location is at hand (exit 2, no traceback)."""

    exit_code = 2


def find_module(name: str) -> Any:
    """``importlib.util.find_spec(name)``, or None when the module is not installed (or its parent
    package is not). The one place the compiler asks whether a module is installed, without importing
    it (the CLI must start fast); the tests replace it to simulate a missing extra."""
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def missing_modules(requires: Requires, stage: Stage) -> list[str]:
    """The import names of ``requires`` at ``stage`` that :func:`find_module` does not find."""
    return [m for m in requires.modules(stage) if find_module(m) is None]


MSG_SCORE_RANGE = "score_range must be [low, high] with low < high (got {rng})"
MSG_RESOLUTION = "score_resolution {res} must be smaller than the width of score_range {rng}"


def score_resolution(system: Any) -> dict[str, float]:
    """``{"score_resolution": x}`` when the spec declares it (absent otherwise, so that the digests of
    specs without it do not change)."""
    res = getattr(system, "score_resolution", None)
    return {} if res is None else {"score_resolution": float(res)}


#: A file reference a system makes: (key path, reference as written, "file" | "folder" | "text").
FileRef = tuple[tuple, str, str]


def file_ref(folder: Path, ref: str) -> dict[str, Any]:
    """``{"path": ref, "sha256": ...}`` of a file inside the spec's folder (validate() ran first)."""
    path, err = resolve_inside(folder, ref)
    if err:  # validate() ran first; this only guards direct callers
        raise FileNotFoundError(err)
    return {"path": ref, "sha256": file_digest(path)["digest"]}



class SystemKind:
    """The compiler's declaration of one system kind: its checks, resolution, fingerprint, what it
    provides, its share of the plan's counts and LLM estimate. A subclass declares :attr:`id` and
    overrides what differs; :func:`system_kind` registers it. The runtime's adapter of the kind binds
    to this declaration (``runtime.systems.system``) and reads what it provides from it.

    Attributes
    ----------
    id : str
        The ``systems[].kind`` it handles.
    provides : frozenset of str
        What the system adds to what the design provides (``{"answers"}`` for LLM screeners and the ``http``, ``command`` and ``python`` kinds,
        which the ``llm_validity`` audit family checks, seed 003 §3.7). Default: nothing.
    needs_text : bool
        True (the default) when the system scores candidate text (so the spec needs a generator and
        job texts); False for scores read from a file.
    remote : bool
        True for a system whose calls ``execution.systems.<id>`` tunes: one called over the network
        (``concurrency``, ``requests_per_s``, ``timeout_s``, ``retries``; issue 35 §2), or a vendor's program
        run per request batch (``timeout_s``, ``concurrency``; issue 36). Default False.
    runs_code : bool
        True for a kind that runs vendor code on the auditor's machine (``command``, ``python``; issue 36
        §1): ``audit execute`` refuses it without ``--allow-exec`` (:meth:`program` names what would run);
        validate, compile, ``verify --spec``, export and gc read its files' digests only. Default False.
    paired_only : bool
        True for a kind that sends each résumé under an opaque id with its variants in one plan batch
        (``http``, ``command``, ``python``): it scores the résumés of a paired design only, and validation
        refuses it, located, on a design that provides ``unpaired`` (population profiles). Default False.
    model : type of pydantic.BaseModel or None
        The spec model of ``systems[i]`` for this kind (a ``System`` of :mod:`compiler.blocks`).
        Default: the model :mod:`compiler.blocks` declares for :attr:`id` (None when none does).
    """

    id: ClassVar[str] = ""
    provides: ClassVar[frozenset[str]] = frozenset()
    needs_text: ClassVar[bool] = True
    remote: ClassVar[bool] = False
    runs_code: ClassVar[bool] = False
    paired_only: ClassVar[bool] = False
    model: ClassVar[type[BaseModel] | None] = None

    def __init__(self) -> None:
        if type(self).model is None:
            self.model = SYSTEM_MODELS.get(self.id)  # type: ignore[misc]

    def requires(self, system: Any) -> Requires:
        """The modules ``systems[i]`` needs beyond the core install, and the extra that installs them.

        Every kind declares it (:data:`CORE` when it needs nothing); a kind that does not is a bug.
        """
        raise NotImplementedError(f"{type(self).__name__} declares no requires()")

    def files(self, i: int, system: Any) -> list[FileRef]:
        """File references of ``systems[i]`` (checked by :func:`compiler.validate.validate`)."""
        return []

    def issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        """Semantic checks of ``systems[i]`` (score range order, resolution inside the range)."""
        lo, hi = system.score_range
        if not lo < hi:
            return [ls.issue(("systems", i, "score_range"), MSG_SCORE_RANGE.format(rng=[lo, hi]))]
        res = getattr(system, "score_resolution", None)
        if res is not None and res >= hi - lo:
            return [ls.issue(("systems", i, "score_resolution"), MSG_RESOLUTION.format(res=res, rng=[lo, hi]))]
        return []

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        """The resolved system (JSON-ready, files replaced by digests)."""
        raise NotImplementedError(f"{type(self).__name__} declares no resolve()")

    def fingerprint(self, resolved: dict[str, Any]) -> dict[str, str]:
        """The model fingerprint recorded in the lock (``{algorithm, digest}``)."""
        return resolved["fingerprint"]

    def source(self, resolved: dict[str, Any]) -> str:
        """What a resolved system scores with, in words for the report (the model's name or folder, the
        endpoint, or the score file). Default: the kind itself."""
        return self.id

    def program(self, resolved: dict[str, Any]) -> str:
        """What a kind that :attr:`runs_code` would run, with its sha256 (the ``--allow-exec`` refusal names
        it). Default: :meth:`source`."""
        return self.source(resolved)

    def llm_model(self, system: Any) -> str | None:
        """The litellm model string of an LLM screener, else None (same-family advisory)."""
        return None

    def texts_to_embed(self, resumes: int | None, jobs: int) -> int | None:
        """Texts this system embeds (None when the number of resumes is unknown at compile time)."""
        return 0

    def estimate(self, resolved: dict[str, Any], resumes: int, est: llm.Estimate) -> None:
        """Add this system's model calls to the compile-time LLM estimate (none by default)."""

    def advisories(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        """Legal but probably unintended content of ``systems[i]`` (printed as warnings)."""
        return []

    def data_issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        """Problems of the data files ``systems[i]`` reads, checked against the design (its jobs and
        variants); run by :func:`compiler.validate.validate` only when the design has no issues."""
        return []


#: The system kinds: the modules of :mod:`compiler.systems` and the ``compiler`` module of every
#: installed plug-in declare theirs with :func:`system_kind`.
SYSTEM_KINDS_REGISTRY: Registry[SystemKind] = Registry("system kind", "compiler.systems")

#: Class decorator declaring a :class:`SystemKind` under its ``id`` (twice: :class:`compiler.registry.PluginError`).
system_kind = SYSTEM_KINDS_REGISTRY.declare
