"""The pre-registration a run was sealed under: ``lock.json`` is the lock the manifest records,
``lock.sig.json`` signs it and its trusted time precedes the seal's (:func:`check_lock`); no earlier lock of
the audit was lost (``lock_recreated``, :func:`check_lock_recreated`); and, with ``--spec``, the spec still
resolves to the locked digest under the same lock or an amendment of it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from runtime.provenance.verify.common import Report, _regular, _utc, _when
from runtime.provenance.verify.trust import Trust, _asn1_trust


def check_lock(run_dir: Path, manifest: dict[str, Any], trust: Trust, report: Report, now=None) -> None:
    """The signed pre-registration (runtime/provenance/locksign.py): ``lock.json`` is the lock the manifest records,
    ``lock.sig.json`` signs its bytes, and the lock's trusted time precedes the seal's."""
    from runtime.provenance.locksign import RUN_LOCK, RUN_LOCK_SIG, check_lock_signature

    lock_file, sig_file = run_dir / RUN_LOCK, run_dir / RUN_LOCK_SIG
    if not lock_file.is_file():
        return  # runs sealed before issue 16 carry no lock copy
    m_lock = manifest.get("lock") or {}
    try:
        lock = json.loads(lock_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        report.fail(RUN_LOCK, f"cannot be read ({type(err).__name__}: {err})")
        return
    if lock.get("created_at") != m_lock.get("created_at") or lock.get("spec_digest") != m_lock.get("spec_digest"):
        report.fail(RUN_LOCK, "is not the lock the signed manifest records (its creation time or spec digest differs)")
    if not sig_file.is_file():
        report.notes.append(f"{RUN_LOCK}: the lock the run used; it was not signed (its time is the compiling machine's clock)")
        return
    try:
        record = json.loads(sig_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        report.fail(RUN_LOCK_SIG, f"cannot be read ({type(err).__name__}: {err})")
        return
    anchors, others = _asn1_trust(trust)
    problems, facts = check_lock_signature(lock_file.read_bytes(), record, trusted_key=trust.public_key,
                                           anchors=anchors, others=others, now=now)
    for p in problems:
        report.fail(RUN_LOCK_SIG, p)
    if problems:
        return
    who = f"Ed25519 key {facts['keyid'][:16]}..." + ("" if facts["pinned"] else " (not the run's manifest key)")
    if facts["time"] is None:
        report.notes.append(f"lock: signed by {who}; no trusted timestamp (created {lock.get('created_at')} by the "
                            "compiling machine's clock)")
        return
    lock_time = _utc(facts["time"])
    if report.sealed_at is not None and lock_time > report.sealed_at:
        report.fail(RUN_LOCK_SIG, f"the lock was timestamped {_when(lock_time)}, after the run was sealed "
                                  f"({_when(report.sealed_at)}): it is not the pre-registration of this run")
        return
    claimed = _claimed_time(manifest.get("generated_at")) if report.sealed_at is None else None
    if claimed is not None and lock_time > claimed + CLOCK_SKEW:  # B-B: only the signer's clock dates the seal
        report.fail(RUN_LOCK_SIG, f"the lock was timestamped {_when(lock_time)}, after the time the seal claims "
                                  f"({_when(claimed)}, the signing machine's clock, PAdES B-B; more than "
                                  f"{CLOCK_SKEW.seconds // 60} minutes of clock difference allowed): either the lock "
                                  "is not this run's pre-registration or the seal's time is false")
        return
    after = (f", before the seal's trusted time {_when(report.sealed_at)}" if report.sealed_at else
             f", before the seal's claimed time {_when(claimed)} (the signing machine's clock)" if claimed else "")
    report.notes.append(f"lock: signed by {who}, timestamped {_when(lock_time)} by {facts['tsa']}{after}")


#: How far a B-B seal's claimed time (the signing machine's clock) may lag a lock's trusted time before
#: ``check_lock`` fails the run (issue 27 §2): ordinary clock difference between machines.
CLOCK_SKEW = dt.timedelta(minutes=5)


def _claimed_time(text: Any) -> dt.datetime | None:
    """An ISO 8601 time of the manifest (``generated_at``) as an aware UTC datetime, or None."""
    try:
        return _utc(dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))) if text else None
    except ValueError:
        return None


def check_lock_recreated(run_dir: Path, run: dict[str, Any], report: Report) -> None:
    """The signed ``run.json`` field ``lock_recreated``: earlier locks of the same audit id that the run's
    lock does not descend from (:func:`runtime.provenance.locksign.earlier_locks`). Each is a FAIL unless the run's
    lock (``lock.json``) lists it in its amendment chain."""
    from runtime.provenance.locksign import RUN_LOCK, lock_lineage

    earlier = [e for e in run.get("lock_recreated") or [] if isinstance(e, dict)]
    if not earlier:
        return
    try:
        lock = json.loads((run_dir / RUN_LOCK).read_text(encoding="utf-8")) if _regular(run_dir / RUN_LOCK) else {}
    except (OSError, ValueError):
        lock = {}  # check_lock names an unreadable lock.json
    explained = lock_lineage(lock) if isinstance(lock, dict) else set()
    for e in earlier:
        if e.get("created_at") in explained:
            continue
        report.fail("run.json", f"the lock was re-created: an earlier lock of this audit (created {e.get('created_at')}, "
                                f"known from {e.get('source')}) is not in the run's amendment chain, so changes made "
                                "since it are not listed as amendments")


def check_spec(spec: Path, locked: str | None, report: Report, resolved_locked: dict[str, Any] | None) -> None:
    """The spec file resolves to the run's locked digest (else name the changed keys).

    Raises
    ------
    compiler.systems.MissingExtra, compiler.systems.MissingModule
        Resolving the spec needs an extra that is not installed (an embedding run's default model is
        hashed): the spec cannot be checked on this install, which is no verification failure (exit 2).
    """
    from compiler import compile_spec
    from compiler.errors import AuditError
    from compiler.hashing import digest
    from compiler.lock import diff_paths
    from compiler.systems import MissingExtra, MissingModule

    try:
        resolved = compile_spec(spec).resolved
    except (MissingExtra, MissingModule):
        raise
    except AuditError as err:
        report.fail(str(spec), f"cannot be compiled: {str(err).splitlines()[0]}")
        return
    now = digest(resolved)["digest"]
    if locked is None:
        report.fail(str(spec), "the run records no locked digest to compare with")
    elif now != locked:
        changes = diff_paths(resolved_locked, resolved) if resolved_locked else []
        keys = "; ".join(f"{p}: run {json.dumps(a)}, spec {json.dumps(b)}" for p, a, b in changes[:10])
        report.fail(str(spec), f"resolves to sha256 {now[:16]}..., the run was locked at {locked[:16]}..."
                               + (f" (changed: {keys})" if keys else ""))
    else:
        report.notes.append(f"spec {spec}: matches the run's locked digest sha256 {locked[:16]}...")


def check_spec_lock(spec: Path, manifest: dict[str, Any], report: Report) -> None:
    """With ``--spec``: the lock beside the spec is the run's lock or an amendment of it. A lock created
    afresh after the run (deleted and compiled again) has lost the amendment history the run belongs
    to, and fails."""
    from compiler.lock import lock_path
    from runtime.provenance.locksign import lock_lineage

    path = lock_path(Path(spec))
    run_created = (manifest.get("lock") or {}).get("created_at")
    if not path.is_file() or not run_created:
        return
    try:
        lock = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        report.fail(str(path), f"cannot be read ({type(err).__name__}: {err})")
        return
    if run_created in lock_lineage(lock):
        if lock.get("created_at") != run_created:
            report.notes.append(f"lock {path}: amended since this run (its amendment chain includes the run's lock of {run_created})")
        return
    report.fail(str(path), f"was created {lock.get('created_at')}; this run used the lock created {run_created}, which is "
                           "not in its amendment chain: the lock was re-created after this run, and the amendment "
                           "history between the two is lost")
