"""The ``audit`` command line: validate, compile (lock), execute.

Exit codes: 0 done; 1 internal error (traceback kept); 2 invalid spec, data file or usage;
3 lock missing or mismatched (or a changed spec compiled without ``--amend``); 4 the ``--fail-on``
gate tripped; 5 the validity protocol's verdict is INCONCLUSIVE (seed 003 §3.7); 6 ``audit verify``
found a failure; 7 a system under test could not be reached (an LLM server still failing after the
retries); what was received is cached.
Heavy libraries (pandas, torch, sentence-transformers) are imported inside the commands that need
them, so ``audit --help`` and ``audit validate`` start fast.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

EXIT_OK, EXIT_INTERNAL, EXIT_INVALID, EXIT_LOCK, EXIT_GATE = 0, 1, 2, 3, 4
EXIT_INCONCLUSIVE = 5
EXIT_VERIFY = 6  # `audit verify` found a failure
EXIT_UNAVAILABLE = 7  # a system under test could not be reached (runtime.llm.client.LlmUnavailable)
EXIT_UNSIGNED = 8  # `audit execute` sealed the run without signing keys and without --unsigned (issue 37 §3)

def _flags_without_a_type() -> None:
    """Typer 0.29's rich help prints a flag's type (``--quiet -q <bool>``) as if it took a value;
    a flag takes none (``--quiet true`` is an extra argument). Show flags as flags: no type column
    for boolean flags (``--quiet``, ``-q``, ``--help``)."""
    from typer.core import TyperOption

    original = TyperOption.display_type_rich
    if getattr(original, "_audit_flags", False):
        return

    def display_type_rich(self, ctx):
        return None if getattr(self, "is_flag", False) and self.metavar is None else original(self, ctx)

    display_type_rich._audit_flags = True
    TyperOption.display_type_rich = display_type_rich


_flags_without_a_type()

app = typer.Typer(
    name="audit",
    help="Correspondence audits of automated hiring systems: validate, compile (lock) and execute a spec.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

#: Help of the operator's --store (issue 41: a spec keeps its store inside its folder; the operator may not).
STORE_HELP = ("The task store of finished tasks (default: execution.store of the spec, else .audit-store in the "
              "spec's folder); never the spec's folder or a folder above it.")

SpecArg = Annotated[Path, typer.Argument(help="The audit spec (YAML).", show_default=False, metavar="SPEC")]


class Gate(str, Enum):
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    INVESTIGATE = "INVESTIGATE"  # the old name of INCONCLUSIVE (methods version 6 and before)


class TierName(str, Enum):
    research = "research"
    operational = "operational"


class EngineName(str, Enum):
    """``audit execute --engine`` (issue 40): :data:`runtime.pipeline.engine.ENGINES`."""

    local = "local"
    ray = "ray"


def _version(value: bool) -> None:
    if value:
        from compiler.lock import tool_version

        print(f"audit-compiler {tool_version()}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Correspondence audits of automated hiring systems: validate, compile (lock) and execute a spec."""


def _console(stderr: bool = False):
    """A Rich console that prints text as it is (``markup=False``): paths, reasons, names and other
    user text may hold brackets such as ``[/x]``. Styled words go through :func:`_styled`."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True, markup=False)


def _styled(word: str, style: str, rest: str):
    """``word`` in ``style`` followed by ``rest`` printed verbatim (never parsed as markup)."""
    from rich.text import Text

    return Text.assemble((word, style), rest)


def _design_help() -> str:
    from runtime.init import DESIGN_WORDS

    return "The kind of audit: " + "; ".join(f"{d}: {w}" for d, w in DESIGN_WORDS.items()) + "."


def _design_names() -> str:
    from runtime.init import DESIGN_WORDS

    return "|".join(DESIGN_WORDS)


@app.command()
def init(
    folder: Annotated[Path, typer.Argument(help="Where to write the starter (created when missing).", metavar="DIR")] = Path("."),
    design: Annotated[str, typer.Option("--design", help=_design_help(), metavar=_design_names())] = "score_file",
) -> None:
    """Write a commented starter audit: DIR/audit.yaml, audit.schema.json and the files the spec names.

    Replaces no file: when one it would write exists, nothing is written (exit 2)."""
    from runtime.init import init_audit

    done = init_audit(folder, design)
    console = _console()
    for rel in done.files:
        console.print(f"wrote {done.folder / rel}", markup=False)
    spec = done.folder / "audit.yaml"
    if done.design == "llm":
        console.print("next: start the local model server (python -m runtime.llm.serve --port 8765 &; needs the "
                      "llm extra), then", markup=False)
    console.print(f"next: read the comments in {spec}, then `audit validate {spec}`, `audit compile {spec}` and "
                  f"`audit execute {spec}` (signed with the keys of `audit keygen`; without keys it exits "
                  f"{EXIT_UNSIGNED}, sealed but unsigned: pass --unsigned for a trial run)", markup=False)


@app.command()
def schema(
    name: Annotated[str, typer.Argument(help="spec (the audit spec) or an artifact: lock, plan, run, manifest, ...", metavar="NAME")] = "spec",
) -> None:
    """Print a JSON Schema, generated from the models: the audit spec (default) or an artifact.

    `audit schema > audit.schema.json` gives an editor the spec's schema (first line of the YAML:
    # yaml-language-server: $schema=audit.schema.json)."""
    from compiler.schema import render, schema_for

    sys.stdout.write(render(schema_for(name)))


@app.command()
def validate(spec: SpecArg) -> None:
    """Check a spec (structure, levels, variants, thresholds, files) without writing anything."""
    from compiler import compile_spec

    compiled = compile_spec(spec)
    _print_warnings(compiled)
    _print_design_warnings(compiled, _scores_if_known(compiled))
    c = compiled.plan["counts"]
    for line in compiled.score_files:
        _console().print(f"score file: {line}", markup=False)
    what = _n(c["profiles"], "profile") if "profiles" in c else _n(c["variants"], "variant")
    _console().print(_styled("valid", "green", f": {spec} ({_n(c['jobs'], 'job')}, {what}, "
                                               f"{_n(c['systems'], 'system')})"))


def _print_warnings(compiled) -> None:
    from compiler.text import terminal_safe

    for w in compiled.warnings:
        print(terminal_safe(f"warning: {w}", keep_lines=True), file=sys.stderr)


def _scores_if_known(compiled):
    """:func:`_known_scores` without a pilot for ``audit validate``: None where the scores are unknown or give
    no SESOI shift (compile says so, exit 2)."""
    from compiler.errors import AuditError

    try:
        return _known_scores(compiled, None)
    except AuditError:
        return None


def _print_design_warnings(compiled, known) -> None:
    """``warning:`` lines on what the design can decide (issue 39 §8,
    :mod:`runtime.analysis.design_warnings`), located: the metric suite's intervals measured outside the
    93–97% coverage target at the nearest simulated design (at ``jobs``), and, when the scores are known,
    categories under the declared power at the SESOI (at ``analysis.effect_size``)."""
    from compiler.text import terminal_safe

    for w in design_warnings(compiled, known):
        print(terminal_safe(f"warning: {w}", keep_lines=True), file=sys.stderr)


def design_warnings(compiled, known) -> list:
    """The located issues :func:`_print_design_warnings` prints (``known``: :func:`_known_scores`' result)."""
    from compiler import catalog
    from compiler.errors import Finding
    from compiler.families import enabled_families
    from runtime.analysis.design_warnings import coverage_warning, power_warning

    r = compiled.resolved
    out = []
    if any(f.id == "metric_suite" for f in enabled_families(r)):
        w = coverage_warning(catalog.METRIC_IDS, len(r["jobs"]))
        if w:
            out.append(Finding(("jobs",), w))
    es = (r.get("analysis") or {}).get("effect_size")
    if es and known is not None:
        from runtime.analysis.power import power_table
        from runtime.analysis.sesoi import sesoi_table

        frame = known[0]
        w = power_warning(power_table(frame, r, sesoi=sesoi_table(frame, r)), target=float(es["power"]),
                          alpha=float(r["analysis"]["alpha"]))
        if w:
            out.append(Finding(("analysis", "effect_size"), w))
    return compiled.loaded.locate(out)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


@app.command("compile")
def compile_(
    spec: SpecArg,
    amend_: Annotated[bool, typer.Option("--amend", help="Accept a change to a locked spec as an amendment (needs --reason).")] = False,
    reason: Annotated[Optional[str], typer.Option("--reason", help="Why the locked spec changes; recorded in the lock and the report.")] = None,
    key_dir: Annotated[Optional[Path], typer.Option("--key-dir", help="Sign the lock with these keys (see `audit keygen`); default $AUDIT_KEY_DIR or ~/.config/audit-compiler/keys when it holds keys.", show_default=False)] = None,
    tsa: Annotated[Optional[str], typer.Option("--tsa", help="RFC 3161 time-stamping authority URL: timestamp the lock's signature (default \\[signing] tsa of the key directory's config.toml).", show_default=False, metavar="URL")] = None,
    pilot: Annotated[Optional[Path], typer.Option("--pilot", help="Run folder of an earlier run of this design: its paired.csv gives the SESOI's score shift and the power (issue 30 §3); its sha256 is recorded in the lock.", show_default=False, metavar="RUN_DIR")] = None,
) -> None:
    """Validate, expand into a plan and write the lock (<spec>.lock.json) and plan (<spec>.plan.json).

    With signing keys the lock is signed (<spec>.lock.sig.json), and with a time-stamping authority its
    signature is timestamped: the pre-registration's time is then provable."""
    from rich.table import Table

    from compiler import compile_spec
    from compiler.errors import AuditError
    from compiler.load import display_path
    from compiler.lock import (MSG_REASON_REQUIRED, amend, append_ledger, build_lock, existing_lock, ledger_path,
                               lock_methods_version, lock_path, plan_path, refuse_link, require_amendment,
                               require_methods_amendment, write_json)
    from compiler.methods import METHODS_VERSION
    from compiler.plan import plan_file

    if amend_ and not (reason and reason.strip()):
        raise AuditError(MSG_REASON_REQUIRED)
    lock_keys, tsa = _lock_keys(key_dir, tsa)  # before any work: a named key directory must hold keys
    compiled = compile_spec(spec)
    _print_warnings(compiled)
    shown = display_path(spec)
    # issue 30 §3: the SESOI and the power need scores (a pilot run, or the score files); checked
    # before anything is written
    known = _known_scores(compiled, pilot)
    _print_design_warnings(compiled, known)
    lock = build_lock(compiled.resolved, compiled.plan, spec_file=spec.name)
    if known is not None and known[2] is not None:
        lock["pilot"] = known[2]
    old = existing_lock(spec, shown)  # a lock of an unknown schema major stops here (exit 3)
    same_spec = old is not None and old.get("spec_digest") == lock["spec_digest"] \
        and old.get("plan_digest") == lock["plan_digest"]
    # a lock made under another methods version is re-locked only as an amendment (compiler.methods)
    other_methods = old is not None and "resolved_spec" in old and lock_methods_version(old) != METHODS_VERSION
    unchanged = same_spec and not other_methods
    if unchanged:
        lock = old  # re-compiling an unchanged spec keeps the pre-registration (and its time)
        if amend_:
            print("note: nothing to amend: the spec matches its lock", file=sys.stderr)
    else:
        if old is not None and "resolved_spec" in old:
            if not amend_:
                raise (require_methods_amendment(old, spec=shown) if same_spec
                       else require_amendment(old, lock, spec=shown))
            lock = amend(old, lock, reason=reason.strip())  # a deliberate change: earlier entries stay
        for path in (plan_path(spec), lock_path(spec), ledger_path(spec)):  # checked before anything is written
            refuse_link(path)
        write_json(plan_path(spec), plan_file(compiled.plan, generated_at=lock["generated_at"]))
        write_json(lock_path(spec), lock)
        append_ledger(spec, lock, "amended" if old is not None and "resolved_spec" in old else "compiled")
    c = compiled.plan["counts"]
    console = _console()
    table = Table(title=f"audit {compiled.resolved['audit']}: what the run will be", show_header=False)
    rows = [
        ("jobs", c["jobs"]), ("base candidates (K x jobs)", c["base_candidates"]),
        ("variants (reference included)", c["variants"]), ("resumes", c["resumes"]),
        ("systems", c["systems"]), ("texts to embed (at most)", c["texts_to_embed"]),
        ("model calls", c["model_calls"]), ("estimated tokens / cost", _tokens_cost(c)),
        ("plan tasks", c["tasks"]), ("metric rows (metrics x variants x systems x conditions)", c["metric_rows"]),
        ("paired candidates per metric cell", c["paired_candidates_per_variant"]),
    ]
    if "controls" in c:  # issue 38: the placebo résumés, scored in batches of their own
        rows.insert(4, ("placebo résumés (negative controls)", c["controls"]))
    if "positive_controls" in c:  # issue 39 §6: the weakened résumés, scored in batches of their own
        rows.insert(4, ("weakened résumés (positive controls)", c["positive_controls"]))
    if "profiles" in c:  # population design (seed 001): no variants, no matrix
        rows = [("jobs", c["jobs"]), ("profiles (per job x jobs)", c["profiles"]), ("systems", c["systems"]),
                ("texts to embed (at most)", c["texts_to_embed"]), ("plan tasks", c["tasks"]),
                ("causal rows (5 quantities + 5 effects) x systems", c["metric_rows"])]
    applicants = compiled.resolved["systems"] and all(x["kind"] == "applicant_file" for x in compiled.resolved["systems"])
    if applicants:  # historical applicants (issue 34): nothing generated, scored or kept
        rows = [("systems (applicant files)", c["systems"]), ("applicants", "read in memory at validate and execute; no row kept"),
                ("model calls", c["model_calls"]), ("plan tasks", c["tasks"])]
    for k, v in rows:
        table.add_row(k, "from the score file" if v is None else str(v))
    console.print(table)
    for line in compiled.score_files:
        console.print(f"score file: {line}", markup=False)
    if "k" in compiled.resolved.get("analysis", {}) and not applicants:  # the metric suite's rule (issue 15)
        from compiler.families.metric_suite import decision_text

        console.print(decision_text(compiled.resolved), markup=False)
    _print_thresholds(console, lock["thresholds"])
    _print_power(console, compiled, known)
    if known is not None and known[2] is not None and unchanged and old.get("pilot") != known[2]:
        console.print("note: the spec matches its lock, which is kept as it is: this pilot's sha256 is not "
                      "recorded in it", markup=False)
    if "llm_estimate" in compiled.plan:
        _print_llm_estimate(console, compiled.plan["llm_estimate"])
    console.print(f"spec digest sha256:{lock['spec_digest']['digest']}")
    if unchanged:
        console.print(f"{lock_path(spec)} unchanged: the spec matches its lock of {lock['created_at']}")
    elif lock["amendments"] and lock["amendments"][-1]["amended_at"] == lock["created_at"]:
        console.print(_styled(f"amendment {len(lock['amendments'])}", "yellow",
                              f" of the lock (reason: {lock['amendments'][-1].get('reason')}); changed keys:"))
        for line in lock["amendments"][-1]["changes"]:
            console.print(f"  - {line}", markup=False)
        console.print(f"wrote {lock_path(spec)} and {plan_path(spec)}")
    else:
        console.print(f"wrote {lock_path(spec)} and {plan_path(spec)}")
    _sign_lock(console, lock_path(spec), lock_keys, tsa)


#: The messages of :func:`signing_options` (the tests assert them).
MSG_TSA_URL = "--tsa {tsa!r}: give the time-stamping authority's http(s) URL"
MSG_UNSIGNED_WITH_KEYS = ("--unsigned runs without signing keys; it cannot be given with {option}: drop one of "
                          "them")
MSG_NO_PDF_SIGNED = ("--no-pdf writes a trial run without its PDF report, and a signed run's report is its signed PDF: "
                     "give --no-pdf with --unsigned, or drop it")
MSG_EXIT_UNSIGNED = ("sealed but UNSIGNED (exit {code}): {run} holds a complete run, but no key signs its report or "
                     "manifest (an unsigned run cannot be signed afterwards): create keys with `audit keygen` and run `audit execute` "
                     "again (finished tasks are reused from the task store), or pass --unsigned to run unsigned on purpose")
MSG_TSA_NEEDS_KEYS = "--tsa timestamps {what}: it needs signing keys (see `audit keygen`)"
MSG_NO_KEYS = "no signing keys in {kd}; create them with `audit keygen --key-dir {kd}`"
MSG_NO_KEYS_NAMED = "no signing keys in {kd} (named by {by}); create them with `audit keygen --key-dir {kd}`"
MSG_NO_COUNTERSIGNER_KEYS = ("no signing keys in {kd}; create the countersigner's with `audit keygen --key-dir {kd} "
                             "--signer NAME --role ROLE`")


def signing_options(key_dir: Optional[Path], tsa: Optional[str], *, load: bool = True, required: str = "option",
                    missing: str = MSG_NO_KEYS, tsa_needs_keys: Optional[str] = None):
    """``--key-dir`` and ``--tsa`` of every command that signs (compile, execute, sign) or writes keys
    (keygen), checked in one order before any work; each failure is an error (exit 2).

    The key directory is ``key_dir``, else ``$AUDIT_KEY_DIR`` or the default one. In order: its keys are
    loaded (a broken directory stops here); a directory without keys is ``missing`` when ``required``
    says so; ``tsa`` must be an http(s) URL; without keys a ``tsa`` is ``tsa_needs_keys``; the TSA
    defaults to the directory's ``[signing] tsa``; a certificate that cannot sign now is refused and one
    ending soon is warned of (stderr).

    Parameters
    ----------
    load : bool
        Read the key directory; False for ``audit keygen``, which writes it (only ``tsa`` is checked).
    required : {"always", "named", "option"}
        When a directory without keys is an error: always (``audit sign``), when ``--key-dir`` or
        ``$AUDIT_KEY_DIR`` names it (``audit execute``), or only when ``--key-dir`` does (``audit
        compile``); otherwise the command goes on unsigned.
    missing : str
        That error, formatted with ``kd`` (the directory) and ``by`` (``--key-dir`` or ``$AUDIT_KEY_DIR``).
    tsa_needs_keys : str, optional
        The error of a ``tsa`` without keys; None where keys are always required.

    Returns
    -------
    (keys, tsa, key_dir)
        The :class:`runtime.provenance.keys.SigningKeys` (None without any, or when not ``load``), the
        TSA URL (None without one) and the key directory.
    """
    import os

    from compiler.errors import AuditError
    from runtime.provenance.keys import KEY_DIR_ENV, default_key_dir, load_keys

    kd = key_dir or default_key_dir()
    keys = load_keys(kd) if load else None
    named = {"always": True, "named": key_dir is not None or bool(os.environ.get(KEY_DIR_ENV)),
             "option": key_dir is not None}[required]
    if load and keys is None and named:
        raise AuditError(missing.format(kd=kd, by="--key-dir" if key_dir is not None else f"${KEY_DIR_ENV}"))
    if tsa is not None and not tsa.startswith(("http://", "https://")):
        raise AuditError(MSG_TSA_URL.format(tsa=tsa))
    if load and keys is None and tsa and tsa_needs_keys:
        raise AuditError(tsa_needs_keys)
    if keys is not None:
        tsa = tsa or keys.tsa
        for w in keys.check_valid():  # an expired or not-yet-valid certificate cannot sign (exit 2, naming the dates)
            print(f"warning: {w}", file=sys.stderr)
    return keys, tsa, kd


def _lock_keys(key_dir: Optional[Path], tsa: Optional[str]):
    """The keys that sign the lock (None without any) and the TSA URL (:func:`signing_options`: a key
    directory named by ``--key-dir`` without keys, or a malformed URL, is an error, exit 2)."""
    keys, tsa, _ = signing_options(key_dir, tsa, required="option", missing=MSG_NO_KEYS,
                                   tsa_needs_keys=MSG_TSA_NEEDS_KEYS.format(what="the lock's signature"))
    if keys is not None:  # the lock is signed as the certificate's holder: dates and revocation (issue 27 §2)
        from runtime.provenance.revocation import check_keys

        status = check_keys(keys, what="audit compile", required=bool(tsa))
        if not status.checked and status.outcome != "self-signed":
            print(f"note: signer's certificate: {status.sentence()}", file=sys.stderr)
    return keys, tsa


def _sign_lock(console, path: Path, keys, tsa: Optional[str]) -> None:
    """Sign the lock when keys are available (and it is not signed as it stands); say what was done."""
    import hashlib

    from compiler.errors import LockError
    from runtime.provenance.locksign import read_signature, sig_path, sign_lock

    if keys is None:
        console.print(f"note: {path.name} is not signed (no signing keys; see `audit keygen`): its time is this "
                      "machine's clock and nothing shows if it is deleted and compiled again", markup=False)
        return
    sig = sig_path(path)
    try:
        old = read_signature(sig) or {}
    except LockError:  # unreadable: replaced by the signature written below, as its message asks
        old = {}
    if old.get("lock_sha256") == hashlib.sha256(path.read_bytes()).hexdigest() and old.get("keyid") == keys.keyid \
            and (old.get("timestamp") or not tsa):
        console.print(f"{sig.name}: the lock is signed as it stands", markup=False)
        return
    rec = sign_lock(path, keys, tsa)
    when = ""
    if rec["timestamp"]:
        import base64

        from runtime.provenance.trusted_time import token_time

        when = f", timestamped {token_time(base64.b64decode(rec['timestamp']['token'])):%Y-%m-%d %H:%M:%S %Z} by {tsa}"
    console.print(f"signed the lock: {sig.name} (Ed25519 {keys.keyid[:16]}...{when or ', no trusted timestamp'})",
                  markup=False)


MSG_PILOT_NO_PAIRED = ("--pilot {dir}: no paired.csv in it; give the folder of an earlier run of this design "
                       "(audit execute writes paired.csv there)")
MSG_PILOT_UNREADABLE = "--pilot {dir}: paired.csv cannot be read as a paired frame: {why}"
MSG_PILOT_DIFFERS = ("--pilot {dir}: its paired.csv is not a run of this design: {what}; a pilot must have the "
                     "spec's jobs and variants")
MSG_NO_SHIFT_AT_COMPILE = ("analysis.effect_size.sesoi {form}: no score shift for system {system!r}, condition "
                           "{condition!r} of {source}: {reason}")
#: Columns a pilot's paired.csv must have.
PILOT_COLUMNS = ("system", "condition", "job_id", "cv_id", "variant", "score")


def _pilot_frame(pilot: Path, resolved: dict):
    """The paired frame of ``--pilot RUN_DIR`` and its record for the lock (issue 30 §3).

    Raises
    ------
    AuditError
        No ``paired.csv``, one that pandas cannot read or that lacks a column, or whose jobs or
        variants differ from the spec's (exit 2, before anything is written).
    """
    import hashlib

    import pandas as pd

    from compiler.errors import AuditError

    path = pilot / "paired.csv"
    if not path.is_file():
        raise AuditError(MSG_PILOT_NO_PAIRED.format(dir=pilot))
    data = path.read_bytes()
    try:
        import io

        frame = pd.read_csv(io.BytesIO(data))
    except (ValueError, UnicodeDecodeError) as err:
        raise AuditError(MSG_PILOT_UNREADABLE.format(dir=pilot, why=str(err).splitlines()[0])) from None
    missing = [c for c in PILOT_COLUMNS if c not in frame]
    if missing:
        raise AuditError(MSG_PILOT_UNREADABLE.format(dir=pilot, why="missing column(s) " + ", ".join(missing)))
    if not pd.api.types.is_numeric_dtype(frame["score"]):
        raise AuditError(MSG_PILOT_UNREADABLE.format(dir=pilot, why="column score is not numeric"))
    what = []
    for noun, want, got in (("jobs", {j["id"] for j in resolved["jobs"]}, set(frame["job_id"].astype(str))),
                            ("variants", set((resolved.get("variants") or {}).get("table") or {}),
                             set(frame["variant"].astype(str)))):
        if want != got:
            extra, absent = sorted(got - want), sorted(want - got)
            what.append(f"{noun} " + "; ".join(x for x in (
                f"not in the spec: {', '.join(extra)}" if extra else "",
                f"missing: {', '.join(absent)}" if absent else "") if x))
    if what:
        raise AuditError(MSG_PILOT_DIFFERS.format(dir=pilot, what="; ".join(what)))
    frame["job_id"], frame["variant"] = frame["job_id"].astype(str), frame["variant"].astype(str)
    return frame, {"paired_csv": str(path), "sha256": hashlib.sha256(data).hexdigest()}


def _score_file_frame(compiled):
    """A paired frame from the score files of a score-file design (precomputed systems, no generator),
    condition ``default``, replicate 0, the axis levels from the variant table; None when there is none."""
    import pandas as pd

    from compiler.systems.precomputed import read_system_file

    r = compiled.resolved
    if r.get("candidates") is not None or not (r.get("variants") or {}).get("table"):
        return None
    table = r["variants"]["table"]
    parts = []
    for i, s in enumerate(compiled.loaded.spec.systems):
        if s.kind != "precomputed":
            continue
        found = read_system_file(compiled.loaded, i, s)
        if found is None or found.problems or not found.rows:
            return None
        f = pd.DataFrame(found.rows)
        f = f.assign(system=s.id, condition="default", replicate=0)
        for axis in r["axes"]:
            f[axis] = f["variant"].map(lambda v, a=axis: table.get(v, {}).get(a))
        parts.append(f)
    return pd.concat(parts, ignore_index=True) if parts else None


def _known_scores(compiled, pilot: Optional[Path]):
    """``(paired frame, source, lock record or None)`` when the scores are known at compile (``--pilot``, or
    a score-file design), else None; the SESOI's pooled shift must exist there (exit 2 otherwise).

    Raises
    ------
    AuditError
        A bad pilot (:func:`_pilot_frame`), or a SESOI that gives no score shift for a system x condition
        of the known scores.
    """
    from compiler.errors import AuditError

    r = compiled.resolved
    es = r.get("analysis", {}).get("effect_size")
    if pilot is not None:
        frame, record = _pilot_frame(pilot, r)
        source = f"the pilot {pilot}"
    elif es:
        frame, record, source = _score_file_frame(compiled), None, "the score files"
    else:
        return None
    if frame is None or not es:
        return None if frame is None else (frame, source, record)
    from runtime.analysis.sesoi import ALL_JOBS, sesoi_table

    table = sesoi_table(frame, r)
    bad = table[(table["job_id"] == ALL_JOBS) & table["shift"].isna()]
    # only a selection ratio needs its shift (a d is read on each contrast's own SD, a score is a shift)
    if len(bad) and isinstance(es["sesoi"], dict) and "selection_ratio" in es["sesoi"]:
        b = bad.iloc[0]
        raise AuditError(MSG_NO_SHIFT_AT_COMPILE.format(form=b["form"], system=b["system"], condition=b["condition"],
                                                        source=source, reason=b["reason"]))
    return frame, source, record


def _sig(x) -> str:
    """3 significant digits; ``—`` for a missing value."""
    import math

    try:
        v = float(x)
    except (TypeError, ValueError):
        return "—"
    return "—" if not math.isfinite(v) else f"{v:.3g}"


def _print_power(console, compiled, known) -> None:
    """The SESOI in three units and the level-1 power (issue 30 §1, §3), 3 significant digits, when the
    scores are known; else one line saying that execute computes them."""
    es = compiled.resolved.get("analysis", {}).get("effect_size")
    if not es:
        return
    if known is None:
        console.print("sesoi and power: computed by audit execute (sesoi.csv, power.csv); give --pilot RUN_DIR "
                      "(an earlier run of this design) to see them now", markup=False)
        return
    from rich.table import Table

    from runtime.analysis.power import power_table
    from runtime.analysis.sesoi import sesoi_table

    frame, source, _ = known
    ses = sesoi_table(frame, compiled.resolved)
    console.print(f"sesoi {ses['form'].iloc[0]} at the decision rule, from {source} (selection ratio, score "
                  "shift, normalised shift, d against the SD of the reference scores):", markup=False)
    for r in ses.itertuples(index=False):
        where = f"  {r.system} · {r.condition} · {'all jobs' if r.job_id == 'ALL' else r.job_id} ({r.rule}): "
        if r.reason:
            console.print(where + f"— ({r.reason})", markup=False)
            continue
        console.print(where + f"ratio {_sig(r.margin)}, shift {_sig(r.shift)} ({_sig(r.shift_normalised)} normalised), "
                      f"d = {_sig(r.d_equivalent)} ({r.standardiser_kind} SD {_sig(r.standardiser)})", markup=False)
    pw = power_table(frame, compiled.resolved, sesoi=ses)
    if pw.empty:
        return
    table = Table(title=f"level-1 score test at the SESOI: power, n for {es['power']:g}, MDE (two-sided at α and α/m₁)")
    for col in ("system · condition", "category", "n", "sd(diff)", "level", "power", "n for power", "MDE shift",
                "MDE ratio", "MDE d"):
        table.add_column(col)
    for r in pw.itertuples(index=False):
        table.add_row(f"{r.system} · {r.condition}", str(r.category), str(r.n), _sig(r.sd_diff), _sig(r.level),
                      _sig(r.power), _sig(r.n_for_80), _sig(r.mde_shift), _sig(r.mde_ratio), _sig(r.mde_d))
    console.print(table)
def threshold_bands(metric: str, bounds: dict) -> tuple[str, str, str]:
    """The PASS, INVESTIGATE and FAIL bands of one pre-registered threshold as ``audit compile`` prints
    them, in the direction :func:`runtime.analysis.classify.classify` reads them (seed 000 Table 3):
    ``≤`` for a lower-is-better metric (``|v|`` where the catalogue classifies the absolute value),
    ``≥`` for a higher-is-better one, ``[b, 1/b]`` for ``selection_ratio``; a metric outside the
    catalogue shows its two numbers as written."""
    from compiler import catalog

    p, i = bounds.get("pass"), bounds.get("investigate")
    info = catalog.METRICS.get(metric)
    if info is None or not isinstance(p, (int, float)) or not isinstance(i, (int, float)):
        return f"pass {p}", f"investigate {i}", "otherwise"
    if metric == "selection_ratio":
        return (f"[{p:g}, {1 / p:.4g}]" if p else "—", f"[{i:g}, {1 / i:.4g}]" if i else "—", "outside")
    v = "|v| " if info.classify_abs else "v "
    if info.direction == "lower":
        return f"{v}≤ {p:g}", f"{v}≤ {i:g}", f"{v}> {i:g}"
    return f"{v}≥ {p:g}", f"{v}≥ {i:g}", f"{v}< {i:g}"


def _print_thresholds(console, thresholds: dict) -> None:
    """The thresholds the lock pre-registers, one table: tier, metric, PASS, INVESTIGATE and FAIL bands
    (issue 37 §3). A status comes from the value's 95% interval against these bands (methods 7)."""
    from rich.table import Table

    table = Table(title="pre-registered thresholds (a status compares the 95% interval with these bands)")
    for col in ("tier", "metric", "PASS", "INVESTIGATE", "FAIL"):
        table.add_column(col, no_wrap=True)
    for tier, metrics in thresholds.items():
        for metric, bounds in metrics.items():
            table.add_row(str(tier), str(metric), *threshold_bands(str(metric), dict(bounds)))
    console.print(table)


def _tokens_cost(c: dict) -> str:
    cost = c["estimated_cost_usd"]
    return f"{c['estimated_tokens']} / " + ("unknown (see below)" if cost is None else f"${cost:.4f}")


def _print_llm_estimate(console, est: dict) -> None:
    """Calls, tokens and cost per LLM stage (compiler.llm.estimate); says where the price is unknown."""
    from rich.table import Table

    table = Table(title="LLM calls per stage (output tokens counted at max_tokens: an upper bound)")
    for col in ("stage", "model", "calls", "input tokens", "output tokens", "cost (USD)"):
        table.add_column(col)
    for st in est["stages"]:
        cost = "unknown" if st["cost_usd"] is None else f"{st['cost_usd']:.4f}"
        table.add_row(st["stage"], st["model"], str(st["calls"]), str(st["input_tokens"]),
                      str(st["output_tokens"]), cost)
    console.print(table)
    methods = sorted({st["method"] for st in est["stages"]})
    console.print(f"tokens counted with {', '.join(methods)}", markup=False)
    for model in sorted({st["model"] for st in est["stages"] if st["cost_usd"] is None}):
        console.print(f"cost unknown for {model}: litellm's cost map has no price for it "
                      "(the total above leaves it out)", markup=False)


@app.command()
def execute(
    spec: SpecArg,
    out: Annotated[Optional[Path], typer.Option("--out", help="Output root (default: reports/).")] = None,
    store: Annotated[Optional[Path], typer.Option("--store", help=STORE_HELP, show_default=False, metavar="DIR")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
    fail_on: Annotated[Optional[Gate], typer.Option("--fail-on", help="Exit 4 when any status row is FAIL, or, with INCONCLUSIVE, anything but PASS (INVESTIGATE: its old name).")] = None,
    tier: Annotated[TierName, typer.Option("--tier", help="Threshold tier the gate reads.")] = TierName.research,
    key_dir: Annotated[Optional[Path], typer.Option("--key-dir", help="Signing keys (see `audit keygen`); default $AUDIT_KEY_DIR or ~/.config/audit-compiler/keys. A named directory without keys is an error; an empty default means an unsigned run.", show_default=False)] = None,
    resume: Annotated[Optional[Path], typer.Option("--resume", help="Complete this killed or failed run folder in place (finished tasks are reused from the task store).", show_default=False, metavar="RUN_DIR")] = None,
    accept_vendor_file: Annotated[Optional[str], typer.Option("--accept-vendor-file", help="Use a blind system's returned score file although it differs from the one first read; the reason, both digests and the time are recorded in the run and its report.", show_default=False, metavar="REASON")] = None,
    tsa: Annotated[Optional[str], typer.Option("--tsa", help="RFC 3161 time-stamping authority URL: the report is signed PAdES B-LTA (trusted time, validation data embedded) and the manifest is timestamped; default \\[signing] tsa of the key directory's config.toml. Without one the report is PAdES B-B, dated by this machine's clock.", show_default=False, metavar="URL")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the run's summary.json on stdout (status counts, risk, validity, gate, exit code); every other line goes to stderr.")] = False,
    allow_exec: Annotated[bool, typer.Option("--allow-exec", help="Let the spec's command and python systems run the vendor's code on this machine (without it such a spec exits 2 before any work, naming each program and its sha256). Recorded in run.json; not hashed.")] = False,
    unsigned: Annotated[bool, typer.Option("--unsigned", help="Seal the run without signing keys on purpose (no key directory is read): exit 0, not 8. Without it a run sealed without keys exits 8 (sealed but unsigned).")] = False,
    no_pdf: Annotated[bool, typer.Option("--no-pdf", help="With --unsigned, a trial run: write report.html and no report.pdf (rendering the PDF is most of a small audit's time). Recorded in run.json (report_pdf) and on the report's provenance section.")] = False,
    engine: Annotated[Optional[EngineName], typer.Option("--engine", help="Where the score batches run: local (this process) or ray (a Ray cluster; needs audit-compiler[ray]); default execution.engine of the spec, else local. Every engine gives the same bytes. Not hashed.", show_default=False)] = None,
    ray_address: Annotated[Optional[str], typer.Option("--ray-address", help="With --engine ray: attach to the Ray cluster at ADDR (host:port of its head, or ray://host:port) and leave it running; default execution.ray_address, else a private Ray on this machine, shut down at the end (RAY_ADDRESS is ignored).", show_default=False, metavar="ADDR")] = None,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, max=4096, help="With --engine ray: worker processes at once (one CPU each); default execution.workers, else the cluster's CPUs.", show_default=False, metavar="N")] = None,
) -> None:
    """Run a locked spec: generate, score, rank, analyse, and write the report into reports/<audit>/<run>/."""
    import contextlib

    with contextlib.redirect_stdout(sys.stderr) if json_out else contextlib.nullcontext():
        result = _execute(spec, out=out, store=store, quiet=quiet, fail_on=fail_on, tier=tier, key_dir=key_dir, resume=resume,
                          accept_vendor_file=accept_vendor_file, tsa=tsa, allow_exec=allow_exec,
                          unsigned=unsigned, no_pdf=no_pdf, engine=engine.value if engine else None,
                          ray_address=ray_address, workers=workers)
    if json_out:  # exactly the sealed file's object
        from runtime.pipeline.summary import SUMMARY

        sys.stdout.write((result.run_dir / SUMMARY).read_text(encoding="utf-8"))
        sys.stdout.flush()
    if result.exit_code:
        raise typer.Exit(result.exit_code)


def _execute(spec: Path, *, out: Optional[Path], store: Optional[Path], quiet: bool, fail_on: Optional[Gate], tier: TierName,
             key_dir: Optional[Path], resume: Optional[Path], accept_vendor_file: Optional[str], tsa: Optional[str],
             allow_exec: bool = False, unsigned: bool = False, no_pdf: bool = False, engine: Optional[str] = None,
             ray_address: Optional[str] = None, workers: Optional[int] = None):
    """The run of `audit execute` and its messages (on stderr under --json); returns the RunResult."""
    from compiler.errors import AuditError
    from runtime.pipeline import execute as run_execute

    if accept_vendor_file is not None and not accept_vendor_file.strip():
        raise AuditError("--accept-vendor-file needs a reason (it is printed in the report)")
    if unsigned and (key_dir is not None or tsa is not None):
        raise AuditError(MSG_UNSIGNED_WITH_KEYS.format(option="--key-dir" if key_dir is not None else "--tsa"))
    if no_pdf and not unsigned:
        raise AuditError(MSG_NO_PDF_SIGNED)
    if fail_on is Gate.INVESTIGATE:  # the old name (issue 29 §1): statuses come from intervals since methods 7
        fail_on = Gate.INCONCLUSIVE
        _console(stderr=True).print("note: --fail-on INVESTIGATE is read as --fail-on INCONCLUSIVE (trips on every "
                                    "status row that is not PASS); statuses come from 95% intervals since methods "
                                    "version 7", markup=False)
    from compiler.load import load_spec
    from compiler.extras import check_extras

    # a missing extra stops the run before the keys are read or a TSA is asked (the pipeline checks again)
    loaded = load_spec(spec)
    check_extras(loaded, "execute")
    from runtime.pipeline.engine import engine_settings

    # the engine before any work (issue 40): Ray installed, an address only with it and reachable (the pipeline
    # checks again, before the run folder exists)
    engine_settings(loaded.spec.execution, engine=engine, ray_address=ray_address, workers=workers)
    if not allow_exec:  # vendor code (issue 36 §1): refused before the keys are read (the pipeline checks again)
        from compiler.systems import kinds_of

        if any(getattr(k, "runs_code", False) for k in kinds_of(loaded.spec.systems)):
            from compiler import compile_spec
            from runtime.pipeline.start import check_allow_exec

            check_allow_exec(compile_spec(spec), allow_exec)
    # before any work: a broken key directory, or one named without keys, stops the run at once (exit 2)
    keys, tsa, kd = (None, None, None) if unsigned else signing_options(
        key_dir, tsa, required="named", missing=MSG_NO_KEYS_NAMED,
        tsa_needs_keys=MSG_TSA_NEEDS_KEYS.format(what="a signature"))
    if tsa:  # before any work: the TSA answers and the signer's chain is valid and not revoked, now
        from runtime.provenance.trusted_time import preflight

        at = preflight(keys, tsa)
        _console().print(f"trusted timestamp: {tsa} answered ({at:%Y-%m-%d %H:%M:%S %Z}); the signer's certificate "
                         "chain is valid and not revoked (checked online); the report will be PAdES B-LTA",
                         markup=False)
    if keys is not None:  # a revoked chain is refused before any work; the status is recorded (issue 27 §2)
        from runtime.provenance.revocation import check_keys

        status = check_keys(keys, what="audit execute", required=bool(tsa))
        _console(stderr=not tsa).print(f"{'' if tsa else 'note: '}signer's certificate: {status.sentence()}", markup=False)
    if keys is not None and not tsa:
        _console(stderr=True).print(
            "note: no time-stamping authority: the report will be signed PAdES B-B, dated by this machine's clock, "
            "and cannot be validated after the certificate expires; pass --tsa URL (or set [signing] tsa in "
            f"{kd / 'config.toml'}) for a trusted time and long-term validation (PAdES B-LTA)", markup=False)
    if unsigned:
        _console(stderr=True).print("note: UNSIGNED run (--unsigned): the report and manifest will not be signed and "
                                    "`audit verify` will fail on this run"
                                    + ("; --no-pdf: report.html only, no report.pdf" if no_pdf else ""), markup=False)
    elif keys is None:
        _console(stderr=True).print(_styled(
            "warning: UNSIGNED run", "bold red", f": no signing keys in {kd}. The report and manifest will not be "
            f"signed, `audit verify` will fail on this run, and audit execute exits {EXIT_UNSIGNED} (sealed but "
            "unsigned). Create keys with `audit keygen` (or pass --key-dir), or pass --unsigned to run unsigned "
            "on purpose."))
    result = run_execute(spec, out=out, store=store, quiet=quiet, keys=keys, resume=resume, accept_vendor_file=accept_vendor_file,
                         tsa=tsa, fail_on=fail_on.value if fail_on else None, tier=tier.value, allow_exec=allow_exec,
                         allow_unsigned=unsigned, pdf=not no_pdf, engine=engine, ray_address=ray_address,
                         workers=workers)
    console = _console()
    reused = result.run.get("reused_tasks") or []
    if reused:
        console.print(f"reused {len(reused)} finished task(s) from the task store {result.run.get('store')}: "
                      f"{', '.join(reused)}", markup=False)
    for pkg, change in result.run.get("version_changes_since_lock", {}).items():
        print(f"warning: {pkg} is {change['now']}, the lock recorded {change['locked']} (see run.json)",
              file=sys.stderr)
    for line in result.summary:  # each audit family's lines (risk, causal verdicts, validity)
        console.print(line, markup=False)
    console.print(f"run folder: {result.run_dir}")
    if keys is not None:
        from runtime.provenance.keys import describe_person

        level = "PAdES B-LTA, trusted timestamp" if tsa else "PAdES B-B, this machine's clock"
        console.print(f"signed: report.pdf ({level}; {describe_person(keys.signer())}) and manifest.dsse.json "
                      f"(Ed25519 {keys.keyid[:16]}...{', timestamped' if tsa else ''}); check with "
                      f"`audit verify {result.run_dir}`", markup=False)
    if fail_on is None and tier is not TierName.research:
        _console(stderr=True).print("note: --tier only selects the tier --fail-on reads; no gate was set")
    hits = result.gate_hits  # computed before the seal, into summary.json
    if hits:
        err = _console(stderr=True)
        err.print(f"--fail-on {fail_on.value} ({tier.value} tier) tripped by {len(hits)} row(s):", markup=False)
        for h in hits[:20]:
            err.print(f"  {h}", markup=False)
    if result.exit_code == EXIT_UNSIGNED:
        _console(stderr=True).print(MSG_EXIT_UNSIGNED.format(code=EXIT_UNSIGNED, run=result.run_dir), markup=False)
    verdict = result.verdict
    if verdict and verdict[0] == "INCONCLUSIVE":
        err = _console(stderr=True)
        err.print("INCONCLUSIVE: the instrument failed a validity check (seed 003 §3.7); its results "
                  "cannot support a finding of no bias:", markup=False)
        for line in verdict[1]:
            err.print(f"  {line}", markup=False)
    return result


@app.command("export")
def export_(
    spec: SpecArg,
    for_vendor: Annotated[Path, typer.Option("--for-vendor", help="Folder for the vendor's files (resumes.csv, jobs.csv, README.txt).", metavar="DIR")],
    store: Annotated[Optional[Path], typer.Option("--store", help=STORE_HELP + " The export's key is kept there: pass the same --store to `audit execute`.", show_default=False, metavar="DIR")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
) -> None:
    """Write the locked spec's résumés for a vendor to score blind: opaque ids, shuffled, no variant or pair."""
    from runtime.export import export_for_vendor

    done = export_for_vendor(spec, for_vendor, store=store, quiet=quiet)
    console = _console()
    console.print(f"wrote {done.folder / 'resumes.csv'}: {done.n} résumés for {_n(done.jobs, 'job')}, shuffled, "
                  "under opaque ids (columns resume_id, job_id, text: no variant, axis level or pair id), "
                  f"with jobs.csv and README.txt", markup=False)
    console.print(("the same résumés were exported before: the same ids and order (" if done.reused else
                   "the key that maps the ids back stays in the task store (") + f"{done.key_id}); never send it",
                  markup=False)
    console.print("next: the vendor returns resume_id,score; save it at the blind system's path and run "
                  "`audit execute`", markup=False)


@app.command()
def status(
    run_dir: Annotated[Path, typer.Argument(help="A run folder.", show_default=False, metavar="RUN_DIR")],
) -> None:
    """Say whether a run is done, running, failed or interrupted (its process died), and at which stage.

    A run recorded as running whose process is gone is marked interrupted in its run.json."""
    import json as _json

    from compiler.errors import AuditError
    from compiler.text import terminal_safe
    from runtime.run.folder import run_state
    from runtime.store import atomic_write

    state, run = run_state(run_dir)
    if state == "missing":
        raise AuditError(f"{run_dir}: no readable run.json (not a run folder of `audit execute`)")
    if state == "interrupted" and run.get("status") == "running":  # record what the dead process could not
        run["status"] = "interrupted"
        try:
            atomic_write(Path(run_dir) / "run.json", (_json.dumps(run, indent=2, ensure_ascii=False) + "\n").encode())
        except OSError as err:  # a read-only or full disk: the state is still told (issue 41)
            print(f"note: could not record the interrupted state in {run_dir / 'run.json'}: {err.strerror or err}",
                  file=sys.stderr)
    console = _console()
    stage = f", stage {run.get('stage')}" if run.get("stage") else ""
    # run.json may come from someone else: what it says is escaped (issue 41)
    console.print(terminal_safe(f"{run_dir}: {state}{stage} (audit {run.get('audit')}, run {run.get('run_id')}, "
                                f"spec {run.get('spec_file')})"), markup=False)
    if run.get("error"):
        console.print(f"error: {terminal_safe(str(run['error']), keep_lines=True)}", markup=False)
    for r in run.get("resumed") or []:
        console.print(terminal_safe(f"resumed at {r.get('at')} after {r.get('previous_status')} (stage {r.get('stage')})"),
                      markup=False)
    if state in ("interrupted", "failed"):
        console.print(f"complete it with: audit execute {terminal_safe(str(run.get('spec_file', 'SPEC')))} --resume {run_dir} "
                      "(spec path as seen from where the run was started; only under the lock it started with)",
                      markup=False)


@app.command()
def gc(
    folders: Annotated[list[Path], typer.Argument(help="Folders whose *.lock.json files (searched recursively) keep their store entries.", show_default=False)],
    store: Annotated[Optional[Path], typer.Option("--store", help="The task store (default: .audit-store in the first FOLDER, where `audit execute` keeps it for a spec there).", show_default=False)] = None,
    delete: Annotated[bool, typer.Option("--delete", help="Remove them (default: a dry run that only lists them).")] = False,
) -> None:
    """Remove task-store entries that no lock in FOLDERS refers to (a dry run unless --delete)."""
    import json as _json

    from compiler.errors import AuditError
    from runtime.store import DEFAULT_STORE, TaskStore, plan_refs, referenced_plan_ids

    for f in folders:
        if not f.is_dir():
            raise AuditError(f"{f}: not a folder; gc keeps the store entries of the *.lock.json files under "
                             "the folders it is given")
    locks = [p for f in folders for p in sorted(f.rglob("*.lock.json"))]
    if not locks:
        raise AuditError(f"no *.lock.json under {', '.join(map(str, folders))}: with no lock to keep, gc would "
                         "remove the whole store; name the folders that hold your locks")
    from compiler.files import MAX_JSON_BYTES, read_regular_text

    for lock in locks:  # an unreadable lock would silently free what it refers to
        try:
            _json.loads(read_regular_text(lock, cap=MAX_JSON_BYTES))["resolved_spec"]  # never a FIFO (issue 41)
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise AuditError(f"{lock}: unreadable lock ({type(err).__name__}); fix or remove it before gc, "
                             "or gc would remove the entries it refers to") from None
    root = store or (folders[0] / DEFAULT_STORE)
    if not root.is_dir():
        raise AuditError(f"{root}: no task store here (pass --store)")
    keep = referenced_plan_ids(locks)
    ts = TaskStore(root)
    records = ts.tasks()
    unused = [t for t in records if not plan_refs(t) & keep]
    console = _console()
    for t in unused:
        console.print(f"{'remove' if delete else 'would remove'} {t['task']} ({t.get('kind')}, {t.get('created_at')})",
                      markup=False)
    if delete:
        n_tasks, n_blobs = ts.remove({t["task"] for t in unused})
        console.print(f"removed {n_tasks} task(s) and {n_blobs} unreferenced blob(s); {len(locks)} lock(s) kept "
                      "the rest", markup=False)
    else:
        console.print(f"{len(unused)} of {len(records)} task(s) no lock refers to ({len(locks)} lock(s) read; "
                      "dry run): run again with --delete to remove them", markup=False)


@app.command()
def keygen(
    key_dir: Annotated[Optional[Path], typer.Option("--key-dir", help="Where to write the keys; default $AUDIT_KEY_DIR or ~/.config/audit-compiler/keys.", show_default=False)] = None,
    signer: Annotated[str, typer.Option("--signer", help="Common name on the self-signed certificate: the responsible person (EU AI Act Annex IV 2(g)).")] = "audit-compiler signer",
    role: Annotated[Optional[str], typer.Option("--role", help="The signer's role, e.g. \"Lead auditor\" (the certificate subject's title).", show_default=False)] = None,
    organisation: Annotated[Optional[str], typer.Option("--organisation", help="Organisation name on the certificate.")] = None,
    tsa: Annotated[Optional[str], typer.Option("--tsa", help="RFC 3161 time-stamping authority URL that `audit execute` uses by default (written to config.toml; its certificates to tsa.crt).", show_default=False, metavar="URL")] = None,
    days: Annotated[int, typer.Option("--days", min=1, help="Validity of the self-signed certificate.")] = 1825,
    p12: Annotated[Optional[Path], typer.Option("--p12", help="Use an organisation's PKCS#12 file for PDF signing (password in $AUDIT_P12_PASSWORD).")] = None,
    cert: Annotated[Optional[Path], typer.Option("--cert", help="Use an organisation's PEM certificate (chain after it) for PDF signing; with --key.")] = None,
    key: Annotated[Optional[Path], typer.Option("--key", help="The PEM private key of --cert.")] = None,
    manifest_key: Annotated[Optional[Path], typer.Option("--manifest-key", help="Use an existing Ed25519 private key (PEM) for the manifest.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace existing keys.")] = False,
) -> None:
    """Create signing keys: Ed25519 for the run manifest, an X.509 certificate and key for the PDF."""
    from runtime.provenance.keygen import keygen as make_keys
    from runtime.provenance.keys import cert_fingerprint

    _, tsa, kd = signing_options(key_dir, tsa, load=False)  # keygen writes the directory: only --tsa is checked
    tsa_certs = None
    if tsa is not None:  # the TSA must answer now; its certificates are pinned in tsa.crt
        import hashlib
        import os

        from runtime.provenance.trusted_time import request_token, token_certificates_pem

        tsa_certs = token_certificates_pem(request_token(tsa, hashlib.sha256(os.urandom(32)).digest()))
    from runtime.provenance.revocation import check_chain

    def vet(certificate, chain):  # an imported certificate: revoked is refused; with a TSA the status is required
        return check_chain([certificate, *chain], what="audit keygen", required=bool(tsa))

    keys = make_keys(kd, signer=signer, organisation=organisation, days=days, force=force, p12=p12, cert=cert,
                     key=key, manifest_key=manifest_key, role=role, tsa=tsa, tsa_certs=tsa_certs, vet=vet)
    from runtime.provenance.keys import describe_person

    console = _console()
    console.print(f"wrote signing keys to {kd} (private keys mode 0600; they never enter a run folder)", markup=False)
    console.print(f"  manifest key: Ed25519, key id {keys.keyid}")
    console.print(f"  PDF signer:   {describe_person(keys.signer())}, certificate sha256 "
                  f"{cert_fingerprint(keys.pdf_cert)}", markup=False)
    if tsa:
        console.print(f"  timestamps:   {tsa} (PAdES B-LTA; its certificates pinned in {kd / 'tsa.crt'})",
                      markup=False)
    console.print(f"  valid until:  {keys.pdf_cert.not_valid_after_utc:%Y-%m-%d}")
    if keys.revocation is not None:
        console.print(f"  {keys.revocation.sentence()}", markup=False)
    for w in keys.check_valid():
        print(f"warning: {w}", file=sys.stderr)
    console.print("Give manifest.pub and signer.crt to whoever verifies your reports: "
                  "`audit verify RUN_DIR --pubkey manifest.pub --cert signer.crt`.")


@app.command()
def sign(
    run_dir: Annotated[Path, typer.Argument(help="A sealed, signed run folder.", show_default=False, metavar="RUN_DIR")],
    key_dir: Annotated[Optional[Path], typer.Option("--key-dir", help="The countersigner's keys (see `audit keygen --role`); default $AUDIT_KEY_DIR or ~/.config/audit-compiler/keys.", show_default=False)] = None,
    role: Annotated[Optional[str], typer.Option("--role", help="The role you sign in, e.g. Reviewer: it must be the role your certificate names.", show_default=False)] = None,
    tsa: Annotated[Optional[str], typer.Option("--tsa", help="RFC 3161 time-stamping authority URL (default \\[signing] tsa of the key directory's config.toml).", show_default=False, metavar="URL")] = None,
    pubkey: Annotated[Optional[Path], typer.Option("--pubkey", help="The auditor's Ed25519 public key (PEM), obtained from the auditor, outside the run folder.", show_default=False)] = None,
    cert: Annotated[Optional[list[Path]], typer.Option("--cert", help="Trusted certificates of the auditor (file or folder, outside the run folder; repeat for several), as for `audit verify`.", show_default=False)] = None,
    unpinned: Annotated[bool, typer.Option("--unpinned", help="Countersign although the auditor cannot be pinned; recorded in countersignatures.json.")] = False,
) -> None:
    """Countersign a sealed run (e.g. as its reviewer): an incremental PDF signature that leaves the
    auditor's valid, and a second signature of the manifest. The run must verify first, against the
    auditor's key or certificate pinned with --pubkey/--cert (files outside the run folder); without a
    pin it is refused (exit 6) unless --unpinned is given."""
    from compiler.errors import AuditError
    from runtime.provenance.countersign import countersign
    from runtime.provenance.keys import describe_person

    if not run_dir.is_dir():
        raise AuditError(f"{run_dir}: no such run folder")
    keys, tsa, _ = signing_options(key_dir, tsa, required="always", missing=MSG_NO_COUNTERSIGNER_KEYS)
    entry = countersign(run_dir, keys, role=role, tsa=tsa, pubkey=pubkey, cert=cert, unpinned=unpinned)
    level = "PAdES B-LTA, trusted timestamp" if tsa else "PAdES B-B, this machine's clock"
    _console().print(f"countersigned {run_dir}: report.pdf field {entry['pdf_field']} ({level}) and manifest.dsse.json "
                     f"(Ed25519 {entry['keyid'][:16]}...) by {describe_person(entry['signer'])}; check with "
                     f"`audit verify {run_dir}`; signer's certificate: {keys.revocation.sentence()}", markup=False)


@app.command()
def verify(
    path: Annotated[Path, typer.Argument(help="A run folder, or a report.pdf.", show_default=False, metavar="RUN_DIR|PDF")],
    spec: Annotated[Optional[Path], typer.Option("--spec", help="Also check that this spec resolves to the run's locked digest.")] = None,
    pubkey: Annotated[Optional[Path], typer.Option("--pubkey", help="The signer's Ed25519 public key (PEM), e.g. manifest.pub.")] = None,
    cert: Annotated[Optional[list[Path]], typer.Option("--cert", help="Trusted certificates (PEM/DER file, or a folder of them; repeat for several): the signers' and time-stamping authorities' roots, e.g. signer.crt.", show_default=False)] = None,
    key_dir: Annotated[Optional[Path], typer.Option("--key-dir", help="Take manifest.pub, signer.crt and tsa.crt from here when --pubkey/--cert are not given.", show_default=False)] = None,
    require_role: Annotated[Optional[list[str]], typer.Option("--require-role", help="Fail unless a signer with this role (certificate title), whose certificate chains to a pinned one, signed the report validly; repeat for several.", show_default=False, metavar="ROLE")] = None,
    require_pinned: Annotated[bool, typer.Option("--require-pinned", help="Fail (exit 6) when nothing was pinned: the signer's key or certificate must come from a file outside the checked folder.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also print the signature libraries' diagnostics.")] = False,
) -> None:
    """Check a run's signatures and hashes (exit 0), or name each failing file and reason (exit 6).

    Lists every signer of the report with name, role, signing time, whether that time is a trusted
    timestamp or the signer's own clock, and whether the signer is pinned. A key or certificate file
    inside the checked folder is evidence, never a pin, however it was named (--pubkey, --cert,
    --key-dir, $AUDIT_KEY_DIR); the last line says what the run was verified against."""
    from compiler.errors import AuditError
    from runtime.provenance.verify import resolve_trust, verify_pdf, verify_run

    if not path.exists():
        raise AuditError(f"{path}: no such run folder or PDF")
    is_dir = path.is_dir()
    from runtime.provenance.keys import KeyMaterialError
    from runtime.provenance.verify import named_key_dir

    try:
        # --key-dir is checked whenever it supplies a pin; $AUDIT_KEY_DIR (ambient) only when nothing else does
        named_key_dir(key_dir, needed=(pubkey is None or not cert) if key_dir is not None else (pubkey is None and not cert))
        trust = resolve_trust(pubkey=pubkey, cert=cert, key_dir=key_dir, run_dir=path if is_dir else None,
                              pdf=None if is_dir else path)
    except KeyMaterialError as err:  # a malformed key or certificate: the verification fails (exit 6)
        err_console = _console(stderr=True)
        err_console.print(_styled("verification FAILED", "bold red", f" for {path}: 1 problem(s)"))
        err_console.print(f"  FAIL {err}")
        raise typer.Exit(EXIT_VERIFY) from None
    kwargs = {"trust": trust, "spec": spec, "require_roles": require_role or None, "require_pinned": require_pinned}
    report = verify_run(path, **kwargs) if is_dir else verify_pdf(path, **kwargs)
    console = _console()
    for note in report.notes:
        console.print(f"ok  {note}", markup=False)
    for i, s in enumerate(report.signers, 1):
        from runtime.provenance.keys import describe_person

        console.print(f"signer {i}: {describe_person(s)}" + ("" if s.get("role") else " (role not stated)")
                      + f"; signed {s['signed_at']} ({s['time_source']}"
                      + (f", {s['tsa']}" if s.get("tsa") else "") + f"); {s['level']}; "
                      + ("pinned" if s.get("pinned") else f"not pinned ({s.get('pin_reason')})"), markup=False)
    if verbose:
        for line in report.details:
            console.print(f"    {line}", markup=False)
    if report.unpinned:
        _console(stderr=True).print(
            f"note: signer not pinned: checked against {', '.join(report.unpinned)} from the checked files "
            "themselves, which proves nothing changed since signing but not who signed; pin it with the signer's key "
            "and certificate obtained from the signer separately (--pubkey/--cert outside the run folder, or "
            "--key-dir).", markup=False)
    if report.failures:
        err = _console(stderr=True)
        err.print(_styled("verification FAILED", "bold red", f" for {path}: {len(report.failures)} problem(s)"))
        from compiler.text import terminal_safe

        for f in report.failures:  # a failure may quote the checked files: escaped (issue 41)
            err.print(f"  FAIL {terminal_safe(str(f), keep_lines=True)}", markup=False)
        if report.details and not verbose:
            err.print(f"  ({len(report.details)} diagnostic line(s) of the signature libraries: add --verbose)",
                      markup=False)
        raise typer.Exit(EXIT_VERIFY)
    tail = f" {report.summary}" if report.summary.startswith("against") else f", {report.summary}"
    console.print(_styled("verified", "green", f": {path}{tail}"))


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``audit`` console script: maps user errors to exit codes without a traceback.

    The first import of :mod:`compiler` happens inside the handler: loading the plug-ins can raise
    :class:`compiler.registry.PluginError` (an id declared twice, exit 1), and an installed plug-in
    that fails to import prints one ``warning:`` line."""
    import warnings

    try:
        from compiler.errors import AuditError, SpecError
        from compiler.registry import PluginWarning
    except Exception as err:  # noqa: BLE001 - the plug-ins of this install contradict each other
        errors = sys.modules.get("compiler.errors")  # importing the package again would raise again
        if errors is None or not isinstance(err, errors.AuditError):
            raise
        print(f"error: {err}", file=sys.stderr)
        sys.exit(err.exit_code)
    show = warnings.showwarning

    def plugin_warning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, PluginWarning):
            print(f"warning: {message}", file=sys.stderr)
        else:
            show(message, category, filename, lineno, file, line)

    warnings.showwarning = plugin_warning
    try:
        rv = app(args=argv, prog_name="audit", standalone_mode=False)
    except typer.Abort:
        sys.exit(EXIT_INTERNAL)
    except typer.TyperException as err:  # typer's (vendored click) usage and parameter errors
        show = getattr(err, "show", None)
        if show is None:
            raise
        show()
        sys.exit(EXIT_INVALID if getattr(err, "exit_code", 2) == 2 else err.exit_code)
    except AuditError as err:
        lines = str(err).splitlines()
        if isinstance(err, SpecError):  # one located issue per line
            lines = [f"error: {line}" for line in lines]
        else:  # one message, possibly with detail lines
            lines = [f"error: {lines[0]}"] + [ln if ln.startswith("  ") else f"  {ln}" for ln in lines[1:]]
        from compiler.text import terminal_safe  # user text is never printed raw (issue 41): ESC, bidi

        print(terminal_safe("\n".join(lines), keep_lines=True), file=sys.stderr)
        sys.exit(err.exit_code)
    sys.exit(rv if isinstance(rv, int) else EXIT_OK)


if __name__ == "__main__":  # pragma: no cover
    main()
