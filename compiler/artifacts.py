"""Typed, versioned artifacts: the lock, the plan, the run record (``run.json``), the manifest and the
run summary (``summary.json``).

Every artifact carries ``schema_version`` (``"MAJOR.MINOR"``), the ``tool`` that wrote it
(``{name, version}``), a UTC ``generated_at`` and, where one applies, the ``run_id`` (dbt
``artifacts/schemas/base.py`` style). A MINOR bump adds optional fields: a reader reads every minor
version of the majors it knows (unknown fields are kept, ``extra="allow"``). A MAJOR bump is a
breaking change: a reader refuses a major it does not know with :class:`ArtifactVersionError`,
naming the file, the version found and the versions it reads.

Writers build a model and dump it with :meth:`Artifact.dump` (``model_dump(mode="json")`` of the
fields that were set, in the order of today's files); readers validate with :func:`read_artifact`
(or :func:`read_lock_file`, :func:`read_plan`, :func:`read_run_record`, :func:`read_manifest`,
:func:`read_summary`).
``python -m compiler.schema`` writes their JSON Schemas into ``schema/`` (a test checks for drift).

Versions: 1.0 (issue 1-10: the untyped files) and 1.1 (issue 11: ``tool``/``generated_at`` on every
artifact, ``methods_version`` in the lock, the run record and the manifest, and the run record's
``stage``, ``pid``, ``host``, ``resumed``, ``reused_tasks``, ``store`` and ``interrupted`` status).
``summary.json`` starts at 1.0 (issue 26).
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from compiler.errors import AuditError, LockError

TOOL_NAME = "audit-compiler"

LOCK_SCHEMA_VERSION = "1.1"
PLAN_SCHEMA_VERSION = "1.1"
RUN_SCHEMA_VERSION = "1.1"
MANIFEST_SCHEMA_VERSION = "1.1"
SUMMARY_SCHEMA_VERSION = "1.2"

#: Run states of ``run.json``: ``interrupted`` is a run whose process died (written by --resume,
#: ``verify`` and ``audit status`` when they find a stale process id or lock file).
RunStatus = Literal["running", "done", "failed", "interrupted"]

MSG_UNKNOWN_MAJOR = (
    "{file}: this {what} has schema_version {found!r}, which audit-compiler {tool} cannot read "
    "(it reads schema versions {supported}; the file was written by {writer}). Use the audit-compiler "
    "version that wrote it{remedy}."
)
MSG_NO_VERSION = "{file}: not a {what} of audit-compiler: no readable schema_version ({found!r}; expected \"MAJOR.MINOR\")"
MSG_WRONG_KIND = "{file}: not a {what}: its kind is {found!r}, expected {kind!r}"
MSG_INVALID = "{file}: this {what} (schema_version {version}) does not match its schema: {errors}"
MSG_UNREADABLE = "{file}: cannot read this {what} ({err})"


def tool_version() -> str:
    """The installed version of audit-compiler (``0+unknown`` from a bare checkout)."""
    try:
        return importlib.metadata.version(TOOL_NAME)
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second with a ``Z`` suffix."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def tool_info() -> dict[str, str]:
    """``{name, version}`` of this tool, as every artifact records it."""
    return {"name": TOOL_NAME, "version": tool_version()}


# ----------------------------------------------------------------------------------------- errors

class ArtifactError(AuditError):
    """An artifact file (lock, plan, ``run.json``, ``manifest.json``) is unreadable, of the wrong kind,
    or does not match its schema. ``path`` names the file. Exit 2 by default; a command reading it
    maps it to its own failure code (``audit verify``: 6; the lock's readers raise :class:`LockError`,
    exit 3)."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | Path | None = None):
        self.path = None if path is None else str(path)
        super().__init__(message)


class ArtifactVersionError(ArtifactError):
    """An artifact's ``schema_version`` has a MAJOR this tool does not read.

    Attributes: ``path``, ``found`` (the version in the file), ``supported`` (the majors read, e.g.
    ``("1",)``)."""

    def __init__(self, message: str, *, path: str | Path | None, found: str, supported: tuple[str, ...]):
        self.found, self.supported = found, supported
        super().__init__(message, path=path)


class LockVersionError(LockError, ArtifactVersionError):
    """A lock of an unknown schema MAJOR (exit 3, as every lock problem)."""


# ----------------------------------------------------------------------------------------- parts

class _Part(BaseModel):
    model_config = ConfigDict(extra="allow")


class Tool(_Part):
    """The tool that wrote an artifact."""

    name: str
    version: str


class Digest(_Part):
    """A hash: ``{algorithm: "sha256", digest: hex}`` (compiler.hashing)."""

    algorithm: str
    digest: str


class ModelFingerprint(_Part):
    """One system under test and its fingerprint (weights, endpoint or score file)."""

    system: str
    kind: str
    fingerprint: dict[str, Any] | None = None


class Amendment(_Part):
    """One amendment of a lock: the superseded entry and the keys that changed (seed 000 §3.7)."""

    amended_at: str
    reason: str | None = None
    changes: list[str] = Field(default_factory=list, description='"key.path: old -> new" lines')
    previous: dict[str, Any] = Field(default_factory=dict,
                                     description="the superseded lock entry: spec_digest, created_at, "
                                                 "plan_digest, resolved_spec, methods_version")


class PlanTask(_Part):
    """One plan task; ``id = <kind>-<digest of kind, inputs, deps>`` (compiler.tasks)."""

    id: str
    kind: str
    deps: list[str]
    inputs: dict[str, Any]


class ManifestEntry(_Part):
    """One file of a sealed run folder."""

    path: str
    sha256: str
    bytes: int


class ManifestLock(_Part):
    """What the manifest records of the lock."""

    spec_file: str
    spec_digest: Digest
    plan_digest: Digest
    created_at: str
    amendments: list[dict[str, Any]] = Field(default_factory=list)
    methods_version: int = 1


# -------------------------------------------------------------------------------------- artifacts

class Artifact(_Part):
    """Base of the artifacts: the version rules and the dump."""

    #: ``kind`` written in the file; the file's role in messages; the schema MAJORs this tool reads.
    KIND: ClassVar[str]
    WHAT: ClassVar[str]
    READS: ClassVar[tuple[str, ...]] = ("1",)
    #: Fields dumped even when left at their default (a reader of a 1.0 file gets them filled in).
    ALWAYS: ClassVar[tuple[str, ...]] = ("schema_version", "kind")

    def model_post_init(self, _context: Any) -> None:
        self.__pydantic_fields_set__.update(self.ALWAYS)

    def dump(self) -> dict[str, Any]:
        """The JSON-ready dict: every field set (or in :attr:`ALWAYS`), in declaration order, then
        unknown fields of a newer minor version as read."""
        return self.model_dump(mode="json", exclude_unset=True)


class Pilot(BaseModel):
    """The pilot of ``audit compile --pilot RUN_DIR`` (issue 30 §3)."""

    model_config = ConfigDict(extra="allow")

    paired_csv: str = Field(description="the pilot's paired.csv, as given")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of its bytes")


class Lock(Artifact):
    """``<spec>.lock.json``: the pre-registration of a spec (DESIGN.md, "Compile, plan, lock")."""

    KIND: ClassVar[str] = "audit-lock"
    WHAT: ClassVar[str] = "lock"
    ALWAYS: ClassVar[tuple[str, ...]] = ("schema_version", "kind", "methods_version", "amendments")

    schema_version: str = LOCK_SCHEMA_VERSION
    kind: Literal["audit-lock"] = "audit-lock"
    tool: Tool
    audit: str
    spec_file: str
    spec_digest: Digest
    seed: int
    thresholds: dict[str, Any]
    models: list[ModelFingerprint]
    versions: dict[str, str]
    plan_digest: Digest
    created_at: str = Field(description="UTC time of this lock entry (an amendment's time)")
    amendments: list[Amendment] = Field(default_factory=list)
    resolved_spec: dict[str, Any]
    generated_at: str | None = Field(None, description="UTC time the file was written (since 1.1)")
    methods_version: int = Field(1, ge=1, description="the methods version (compiler.methods) the lock "
                                                      "was made under; 1 when absent (schema 1.0)")
    pilot: Pilot | None = Field(None, description="audit compile --pilot: the earlier run whose paired.csv sized "
                                                  "the audit (issue 30 §3); absent without one")


class Plan(Artifact):
    """``<spec>.plan.json``: the tasks of a run, each id the hash of its resolved inputs."""

    KIND: ClassVar[str] = "audit-plan"
    WHAT: ClassVar[str] = "plan"

    schema_version: str = PLAN_SCHEMA_VERSION
    kind: Literal["audit-plan"] = "audit-plan"
    tool: Tool | None = Field(None, description="since 1.1")
    generated_at: str | None = Field(None, description="UTC time the file was written (since 1.1)")
    audit: str
    spec_digest: Digest
    counts: dict[str, Any]
    tasks: list[PlanTask]
    sensitivity: list[dict[str, Any]] | None = Field(None, description="minimum detectable effects (effects family)")
    llm_estimate: dict[str, Any] | None = Field(None, description="calls, tokens and cost per LLM stage")


class RunRecord(Artifact):
    """``run.json``: the record of one run, rewritten at every stage change."""

    KIND: ClassVar[str] = "audit-run"
    WHAT: ClassVar[str] = "run record (run.json)"
    ALWAYS: ClassVar[tuple[str, ...]] = ("schema_version", "kind", "methods_version")

    schema_version: str = RUN_SCHEMA_VERSION
    kind: Literal["audit-run"] = "audit-run"
    run_id: str
    audit: str
    spec_file: str
    spec_digest: Digest
    lock_created_at: str
    plan_digest: Digest
    seed: int
    generated_at: str
    tool: Tool
    versions: dict[str, str]
    models: list[ModelFingerprint]
    timings: dict[str, float]
    counts: dict[str, Any]
    systems_info: dict[str, Any]
    tasks: list[str]
    artifacts: list[str]
    status: RunStatus
    execution: dict[str, Any]
    spec_git: dict[str, Any] | None = None
    reproduce: list[str] = Field(default_factory=list)
    allow_exec: bool = Field(False, description="audit execute --allow-exec: the run could run vendor code (systems "
                             "of kind command or python; issue 36)")
    report_pdf: bool = Field(True, description="False for a trial run of audit execute --unsigned --no-pdf: the run "
                             "folder holds report.html and no report.pdf")
    version_changes_since_lock: dict[str, dict[str, Any]] = Field(default_factory=dict)
    methods_version: int = Field(1, ge=1, description="the lock's methods version (since 1.1)")
    # written by later stages
    generator_info: dict[str, Any] | None = None
    validity: dict[str, Any] | None = None
    pdf_signature: dict[str, Any] | None = Field(
        None, description="the PDF signature's placement and signer: page (0-based page index, as pyHanko "
                          "counts: the printed page number is page + 1), box (PDF points), signer, profile (PAdES level), field (the signature field)")
    signed: bool | None = None
    error: str | None = None
    # the run's process and resumption (issue 11, parts 2-3)
    stage: str | None = Field(None, description="the stage in progress")
    pid: int | None = None
    host: str | None = None
    resumed: list[dict[str, Any]] = Field(default_factory=list,
                                          description="one entry per --resume: time, previous status")
    reused_tasks: list[str] = Field(default_factory=list, description="task ids taken from the task store")
    computed_tasks: list[str] = Field(default_factory=list, description="task ids computed and kept in the store")
    store: str | None = Field(None, description="the task store, as a display string")
    # where the score batches ran (issue 40 B)
    engine: dict[str, Any] | None = Field(
        None, description="the engine the score batches ran on: name (local, ray), address (the Ray cluster "
                          "attached to; null: this process or a private instance), workers, worker_pids (the "
                          "distinct processes that scored batches), tasks (units dispatched), retried_tasks (the "
                          "batches run again after their worker died)")
    # the signed pre-registration (issue 16)
    lock_signature: dict[str, Any] | None = Field(
        None, description="the lock's signature as checked by execute: keyid, signer, timestamp time and TSA")
    lock_recreated: list[dict[str, Any]] = Field(
        default_factory=list, description="earlier locks of the same audit id this lock does not descend from")
    # the engagement's history (issue 37 §3)
    engagement: dict[str, Any] | None = Field(
        None, description="runs sealed under each lock the amendments superseded (superseded: amendment, "
                          "created_at, spec_digest, runs) and under this lock before this run (this_lock: "
                          "created_at, runs, run_number); each run: run_id, sealed_at, signer (null: unsigned)")


class Manifest(Artifact):
    """``manifest.json``: every file of a sealed run with its sha256 (the signed Statement's predicate)."""

    KIND: ClassVar[str] = "audit-manifest"
    WHAT: ClassVar[str] = "manifest"

    schema_version: str = MANIFEST_SCHEMA_VERSION
    kind: Literal["audit-manifest"] = "audit-manifest"
    run_id: str
    audit: str
    generated_at: str
    run_generated_at: str
    status: RunStatus
    artifacts: list[ManifestEntry]
    lock: ManifestLock
    seed: int
    tool: Tool
    versions: dict[str, str]
    models: list[ModelFingerprint]
    spec_git: dict[str, Any] | None = None
    reproduce: list[str] | None = None
    signing: dict[str, Any] | None = None
    resolved_spec: dict[str, Any]
    methods_version: int = Field(1, ge=1, description="the lock's methods version (since 1.1)")


class StatusCounts(_Part):
    """How many status rows have each status under one tier (``N/A``: a row without a status)."""

    PASS: int = Field(ge=0)
    INCONCLUSIVE: int = Field(0, ge=0, description="interval straddles a PASS-band bound (issue 29 §1; since 1.1)")
    INVESTIGATE: int = Field(ge=0, description="seed 001 §5.2's middle level (the causal family)")
    FAIL: int = Field(ge=0)
    NA: int = Field(ge=0, alias="N/A")


class TierCounts(_Part):
    """:class:`StatusCounts` under each threshold tier."""

    research: StatusCounts
    operational: StatusCounts


class SummaryValidity(_Part):
    """The validity protocol's verdict (seed 003 §3.7) and the checks behind an INCONCLUSIVE one."""

    verdict: Literal["VALID", "INCONCLUSIVE"]
    failed: list[str] = Field(default_factory=list)


class GateRow(_Part):
    """One status row that trips the ``--fail-on`` gate."""

    family: str
    system: str
    condition: str
    item: str
    status: Literal["FAIL", "INCONCLUSIVE", "INVESTIGATE"]


class SummaryGate(_Part):
    """The ``--fail-on`` gate of the run: the gate, the tier it read, whether it tripped and on which rows."""

    fail_on: Literal["FAIL", "INCONCLUSIVE", "INVESTIGATE"] | None = Field(
        description="the gate (INCONCLUSIVE trips on every row not PASS; INVESTIGATE: its name in summaries "
                    "1.0, methods version 6 and before); null when none was set")
    tier: Literal["research", "operational"]
    tripped: bool
    rows: list[GateRow] = Field(description="the status rows that trip it")


class Summary(Artifact):
    """``summary.json``: the outcome of a run, machine-readable (issue 26): status counts over the rows
    the ``--fail-on`` gate reads, the risk rows, the validity verdict, the gate and the exit code of
    ``audit execute``. Written before the manifest, so the seal covers it; ``audit execute --json``
    prints it."""

    KIND: ClassVar[str] = "audit-summary"
    WHAT: ClassVar[str] = "run summary (summary.json)"

    schema_version: str = SUMMARY_SCHEMA_VERSION
    kind: Literal["audit-summary"] = "audit-summary"
    tool: Tool
    generated_at: str
    audit: str
    run_id: str
    spec_digest: Digest
    methods_version: int = Field(ge=1, description="the lock's methods version")
    signed: bool = Field(description="whether the run's report and manifest are signed")
    status_counts: TierCounts = Field(description="status rows per status under each tier: every audit "
                                                  "family's rows, the ones the --fail-on gate reads")
    risk: list[dict[str, Any]] = Field(description="the rows of risk.csv (empty when the run has none)")
    validity: SummaryValidity | None = Field(description="the validity protocol's verdict; null without one")
    gate: SummaryGate
    exit_code: Literal[0, 4, 5, 8] = Field(description="the exit code of `audit execute`: 0 done, 4 the gate "
                                                       "tripped, 5 the verdict is INCONCLUSIVE (before 4), 8 sealed "
                                                       "but unsigned without --unsigned (after 4; since 1.2)")

    def dump(self) -> dict[str, Any]:
        """As :meth:`Artifact.dump`, with the status key ``N/A`` written by its alias."""
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)


ARTIFACTS: dict[str, type[Artifact]] = {"lock": Lock, "plan": Plan, "run": RunRecord, "manifest": Manifest,
                                        "summary": Summary}

_VERSION = re.compile(r"^(\d+)\.(\d+)$")


# ----------------------------------------------------------------------------------------- readers

def validate_artifact(data: Any, cls: type[Artifact], *, source: str | Path, remedy: str = "") -> Artifact:
    """Check ``data``'s version and kind, then validate it with ``cls``.

    Raises
    ------
    ArtifactVersionError
        The MAJOR of ``schema_version`` is not in ``cls.READS``.
    ArtifactError
        No ``schema_version``, another ``kind``, or a mismatch with the schema.
    """
    name = str(source)
    if not isinstance(data, dict):
        raise ArtifactError(MSG_UNREADABLE.format(file=name, what=cls.WHAT, err="not a JSON object"), path=source)
    found = data.get("schema_version")
    m = _VERSION.match(found) if isinstance(found, str) else None
    if m is None:
        raise ArtifactError(MSG_NO_VERSION.format(file=name, what=cls.WHAT, found=found), path=source)
    if m.group(1) not in cls.READS:
        tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}
        writer = f"{tool.get('name', TOOL_NAME)} {tool.get('version', '(version not recorded)')}"
        raise ArtifactVersionError(
            MSG_UNKNOWN_MAJOR.format(file=name, what=cls.WHAT, found=found, tool=tool_version(), writer=writer,
                                     supported=", ".join(f"{v}.x" for v in cls.READS), remedy=remedy),
            path=source, found=found, supported=cls.READS)
    if data.get("kind") != cls.KIND:
        raise ArtifactError(MSG_WRONG_KIND.format(file=name, what=cls.WHAT, found=data.get("kind"), kind=cls.KIND),
                            path=source)
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        errors = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in err.errors()[:5])
        raise ArtifactError(MSG_INVALID.format(file=name, what=cls.WHAT, version=found, errors=errors),
                            path=source) from None


def read_artifact(path: str | Path, cls: type[Artifact], *, remedy: str = "") -> Artifact:
    """Read and validate one artifact file (see :func:`validate_artifact`); an unreadable file or
    invalid JSON raises :class:`ArtifactError`."""
    from compiler.files import MAX_JSON_BYTES, read_regular_text

    try:  # only a regular file is opened (issue 41): a FIFO run.json must not hang verify or status
        data = json.loads(read_regular_text(path, cap=MAX_JSON_BYTES, shown=Path(path).name))
    except (OSError, ValueError) as err:
        raise ArtifactError(MSG_UNREADABLE.format(file=path, what=cls.WHAT, err=err), path=path) from None
    return validate_artifact(data, cls, source=path, remedy=remedy)


def read_lock_file(path: str | Path, *, remedy: str = "") -> Lock:
    """Read a lock. Raises :class:`LockVersionError` (exit 3) on an unknown MAJOR, :class:`ArtifactError`
    otherwise (callers map it to :class:`LockError`)."""
    try:
        return read_artifact(path, Lock, remedy=remedy)
    except ArtifactVersionError as err:
        raise LockVersionError(str(err), path=err.path, found=err.found, supported=err.supported) from None


def read_plan(path: str | Path) -> Plan:
    """Read ``<spec>.plan.json``; raises :class:`ArtifactVersionError` / :class:`ArtifactError`."""
    return read_artifact(path, Plan)


def read_run_record(path: str | Path) -> RunRecord:
    """Read a ``run.json``; raises :class:`ArtifactVersionError` (unknown MAJOR) or :class:`ArtifactError`
    (unreadable, not JSON, not a run record). ``.dump()`` gives the dict the pipeline works on."""
    return read_artifact(path, RunRecord)


def read_manifest(path: str | Path) -> Manifest:
    """Read a ``manifest.json``; raises :class:`ArtifactVersionError` or :class:`ArtifactError`.
    For the signed predicate of ``manifest.dsse.json``, use ``validate_artifact(predicate, Manifest,
    source=...)``."""
    return read_artifact(path, Manifest)


def read_summary(path: str | Path) -> Summary:
    """Read a ``summary.json``; raises :class:`ArtifactVersionError` or :class:`ArtifactError`."""
    return read_artifact(path, Summary)


def dump_run_record(run: dict[str, Any]) -> dict[str, Any]:
    """Validate a run record dict and return its dump (the keys it has, in the model's order).

    Raises :class:`ArtifactError` when it does not match :class:`RunRecord` (a bug of the writer)."""
    return validate_artifact(run, RunRecord, source="run.json").dump()


def json_schema(cls: type[Artifact]) -> dict[str, Any]:
    """The JSON Schema (validation mode) of an artifact model."""
    return cls.model_json_schema(mode="validation")
