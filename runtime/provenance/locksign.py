"""A tamper-evident pre-registration (issue 16): the signed lock and its trusted time.

``audit compile`` with signing keys signs the lock it writes: ``<spec>.lock.sig.json`` holds a DSSE
envelope whose payload is the lock file's exact bytes, signed with the auditor's Ed25519 manifest key,
and, with a time-stamping authority, an RFC 3161 token over the signature (the time the thresholds were
provably fixed). ``audit execute`` copies both into the run folder (``lock.json``, ``lock.sig.json``), so
the manifest hashes them, and keeps a ledger of the locks each audit id ran under in the task store
(``locks.jsonl``). ``audit verify`` checks the lock's signature and that its trusted time precedes the
run's; a lock re-created after an earlier lock of the same audit id was used (known from that ledger
or from the lock's git history) is flagged in ``run.json`` and the report: deleting a lock and
compiling again would otherwise erase the amendment history without a trace.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

LOCK_PAYLOAD_TYPE = "application/vnd.audit-compiler.lock+json"
RUN_LOCK, RUN_LOCK_SIG = "lock.json", "lock.sig.json"
LEDGER = "locks.jsonl"


def sig_path(lock_path: Path) -> Path:
    """``spec.lock.json`` -> ``spec.lock.sig.json``."""
    lock_path = Path(lock_path)
    return lock_path.with_name(lock_path.name.removesuffix(".json") + ".sig.json")


#: Why a lock's signature file is refused; ``{file}`` is the file, ``{why}`` the reason.
MSG_SIG_UNREADABLE = ("{file}: the lock's signature file cannot be read ({why}); run `audit compile` to sign the lock "
                      "again")


def read_signature(path: Path) -> dict[str, Any] | None:
    """The signature record of a lock (``<spec>.lock.sig.json``), read under one policy for ``audit compile``
    and ``audit execute``: a regular file (a FIFO or device is never opened), at most
    :data:`compiler.files.MAX_JSON_BYTES`, holding a JSON object. None when there is no such file.

    Raises
    ------
    compiler.errors.LockError
        The file is not a regular file, too large, not UTF-8 JSON, or not a JSON object (exit 3); the
        message names the file and says to run ``audit compile`` again.
    """
    from compiler.errors import LockError
    from compiler.files import MAX_JSON_BYTES, FileProblem, read_regular_text

    try:
        record = json.loads(read_regular_text(path, cap=MAX_JSON_BYTES))
    except FileProblem as err:
        if err.kind == "missing":
            return None
        why = err.reason
    except OSError as err:
        why = err.strerror or str(err)
    except ValueError as err:  # not UTF-8 (UnicodeDecodeError) or not JSON
        why = str(err)
    else:
        if isinstance(record, dict):
            return record
        why = "not a JSON object"
    raise LockError(MSG_SIG_UNREADABLE.format(file=path, why=why))


def sign_lock(lock_path: Path, keys, tsa: str | None = None) -> dict[str, Any]:
    """Sign the lock file's bytes (DSSE, Ed25519 manifest key) and timestamp the signature with ``tsa``;
    write and return the signature record.

    Returns
    -------
    dict
        ``lock_sha256``, ``keyid``, ``public_key`` (PEM), ``signer`` (name, role, organisation of the
        PDF certificate), ``envelope`` (DSSE), ``timestamp`` (``{tsa, token}`` or None).
    """
    from runtime.provenance.sign import dsse_sign, render_json
    from runtime.store import atomic_write

    data = Path(lock_path).read_bytes()
    envelope = dsse_sign(data, LOCK_PAYLOAD_TYPE, keys.manifest_key, keys.keyid)
    stamp = None
    if tsa:
        from runtime.provenance.trusted_time import timestamp_envelope

        (entry,) = timestamp_envelope(envelope, tsa)["timestamps"]  # the manifest's token, over this signature
        stamp = {"tsa": tsa, "token": entry["token"]}
    record = {"lock_sha256": hashlib.sha256(data).hexdigest(), "keyid": keys.keyid,
              "public_key": keys.public_pem().decode("ascii"), "signer": keys.signer(), "envelope": envelope,
              "timestamp": stamp}
    atomic_write(sig_path(lock_path), render_json(record))
    return record


def check_lock_signature(lock_bytes: bytes, record: dict[str, Any], *, trusted_key=None, anchors=(), others=(),
                         now: dt.datetime | None = None) -> tuple[list[str], dict[str, Any]]:
    """Check a lock signature record against the lock's bytes.

    Returns
    -------
    (problems, facts)
        ``problems`` names each failure; ``facts`` has ``keyid``, ``pinned`` (the key is ``trusted_key``),
        ``intact`` (the signature verifies and signs exactly ``lock_bytes``), ``time`` (the TSA's time, or
        None), ``tsa`` (its name).
    """
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    from runtime.provenance import keys as K
    from runtime.provenance.sign import pae

    problems: list[str] = []
    facts: dict[str, Any] = {"keyid": None, "pinned": False, "intact": False, "time": None, "tsa": None}
    try:
        env = record["envelope"]
        payload = base64.b64decode(env["payload"], validate=True)
        sig = base64.b64decode(env["signatures"][0]["sig"], validate=True)
        key = load_pem_public_key(record["public_key"].encode("ascii"))
        facts["keyid"] = kid = K.key_id(key)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
        return [f"the lock signature cannot be read ({type(err).__name__}: {err})"], facts
    if trusted_key is not None and K.key_id(trusted_key) == kid:
        facts["pinned"] = True
    if env.get("payloadType") != LOCK_PAYLOAD_TYPE:
        problems.append(f"payloadType is {env.get('payloadType')!r}, not {LOCK_PAYLOAD_TYPE!r}")
    try:
        key.verify(sig, pae(env["payloadType"], payload))
    except (InvalidSignature, ValueError, TypeError):
        problems.append(f"the lock's signature does not verify with the Ed25519 key {kid[:16]}...")
    if payload != lock_bytes:
        problems.append("the signed lock is not this lock (its bytes differ: edited or replaced after signing)")
    facts["intact"] = not problems
    stamp = record.get("timestamp")
    if stamp:
        from runtime.provenance.trusted_time import check_token

        try:
            token = base64.b64decode(stamp["token"], validate=True)
        except (KeyError, TypeError, ValueError) as err:
            problems.append(f"the lock's timestamp cannot be read ({type(err).__name__}: {err})")
            return problems, facts
        got = check_token(token, hashlib.sha256(sig).digest(), anchors=list(anchors), others=list(others), now=now)
        problems += [f"the lock's timestamp: {p}" for p in got.problems]
        if not got.problems:
            facts["time"], facts["tsa"] = got.time, got.tsa
    return problems, facts


def record_lock(run: dict[str, Any], run_dir: Path, spec_path: Path, lock: dict[str, Any], keys, store: Path) -> None:
    """The signed pre-registration (issue 16) of a new run: copy the lock and its signature into the run
    folder (the manifest hashes them), record the signature's facts in ``run`` (``lock_signature``), and
    flag earlier locks of the same audit id that this lock does not descend from (``lock_recreated``: task
    store ledger, git history, the ledger beside the lock), with a warning on stderr for each. The run is
    added to the ledger once the store is open (:func:`record_use`).

    Parameters
    ----------
    run : dict
        The run record (``run.json``); ``artifacts`` gets ``lock.sig.json`` (when the lock is signed) and
        ``lock.json``.
    run_dir : Path
        The new run folder.
    spec_path : Path
        The spec; its lock is :func:`compiler.lock.lock_path` of it, the signature :func:`sig_path` of that.
    lock : dict
        The lock the run uses.
    keys : runtime.provenance.keys.SigningKeys or None
        The run's keys: its manifest key is the pinned one, its certificates (and the key directory's
        ``tsa.crt``) the trust anchors of the lock's timestamp.
    store : Path
        The task store's root (its ledger of the locks runs used).

    Raises
    ------
    compiler.errors.LockError
        The lock's signature file cannot be read (:func:`read_signature`), or does not sign this lock (it
        changed after it was signed; exit 3).
    """
    import shutil
    import sys

    from compiler.errors import LockError
    from compiler.lock import lock_path
    from runtime.provenance.keys import TSA_CRT, describe_person, load_certs
    from runtime.provenance.trusted_time import anchors_and_others, to_asn1

    lpath = lock_path(spec_path)
    sig = sig_path(lpath)
    record = read_signature(sig)
    if record is not None:
        certs = [to_asn1(c) for c in ([keys.pdf_cert, *keys.pdf_chain] if keys is not None else [])]
        if keys is not None and (keys.key_dir / TSA_CRT).is_file():
            certs += [to_asn1(c) for c in load_certs(keys.key_dir / TSA_CRT)]
        anchors, others = anchors_and_others(certs)
        problems, facts = check_lock_signature(lpath.read_bytes(), record, trusted_key=keys.public_key if keys else None,
                                               anchors=anchors, others=others)
        if not facts["intact"]:
            raise LockError(f"{lpath.name}: {'; '.join(problems)}; run `audit compile` to sign the lock again "
                            f"(or restore the lock that {sig.name} signed)")
        run["lock_signature"] = {"keyid": facts["keyid"], "signer": describe_person(record.get("signer") or {"name": "?"}),
                                 "time": facts["time"].strftime("%Y-%m-%d %H:%M:%S UTC") if facts["time"] else None,
                                 "tsa": facts["tsa"], "problems": problems}
        shutil.copyfile(sig, run_dir / RUN_LOCK_SIG)
        run["artifacts"] += [RUN_LOCK_SIG]
    shutil.copyfile(lpath, run_dir / RUN_LOCK)
    run["artifacts"] += [RUN_LOCK]
    run["lock_recreated"] = earlier_locks(lock, store_root=store, lock_path=lpath)
    for e in run["lock_recreated"]:
        print(f"warning: the lock was re-created: an earlier lock of audit {lock.get('audit')!r} (created "
              f"{e['created_at']}, known from {e['source']}) is not in its amendment chain; the report says so",
              file=sys.stderr)


# ------------------------------------------------------------------------------ re-created locks

def lock_identity(lock: dict[str, Any]) -> dict[str, Any]:
    """What identifies one pre-registration: its creation time and first spec digest (an amendment keeps
    both in its chain)."""
    return {"created_at": lock.get("created_at"), "spec_digest": (lock.get("spec_digest") or {}).get("digest")}


def lock_lineage(lock: dict[str, Any]) -> set[str]:
    """Creation times of this lock and of every lock its amendment chain supersedes."""
    out = {lock.get("created_at")}
    for a in lock.get("amendments") or []:
        out.add((a.get("previous") or {}).get("created_at"))
    return {x for x in out if x}


def earlier_locks(lock: dict[str, Any], *, store_root: Path | None, lock_path: Path | None) -> list[dict[str, Any]]:
    """Earlier locks of the same audit id that this lock does not descend from: created before it, not in
    its amendment chain. Sources, in this order (the first names an entry): the task store's ledger (locks
    runs used), the lock file's git history, and the ledger beside the lock (``<spec>.locks.jsonl``, every
    lock ``audit compile`` wrote; issue 27 §5).

    Returns
    -------
    list of dict
        ``created_at``, ``spec_digest``, ``source`` ("task store: run RUN_ID", "git: commit HASH" or "the
        ledger beside the lock, NAME").
    """
    from compiler.lock import ledger_beside, read_ledger as compiler_read_ledger

    mine, audit = lock_lineage(lock), lock.get("audit")
    created = lock.get("created_at") or ""
    found: dict[str, dict[str, Any]] = {}

    def add(entry: dict[str, Any], source: str) -> None:
        """A ledger line (spec digest as hex) or a lock (spec digest as {algorithm, digest}); the first
        source that names a lock is kept."""
        when, digest = entry.get("created_at"), entry.get("spec_digest")
        if entry.get("audit") == audit and isinstance(when, str) and when < created and when not in mine:
            found.setdefault(when, {"created_at": when,
                                    "spec_digest": digest.get("digest") if isinstance(digest, dict) else digest,
                                    "source": source})

    for entry in read_ledger(store_root) if store_root else []:
        add(entry, f"task store: run {entry.get('run_id')}")
    for old, commit in git_lock_history(lock_path) if lock_path else []:
        add(old, f"git: commit {commit[:12]}")
    beside = ledger_beside(lock_path) if lock_path else None
    for entry in compiler_read_ledger(beside) if beside else []:
        add(entry, f"the ledger beside the lock, {beside.name}")
    return sorted(found.values(), key=lambda e: e["created_at"])


def read_ledger(store_root: Path) -> list[dict[str, Any]]:
    """The task store's ledger of the locks runs used (:data:`LEDGER`)."""
    from compiler.lock import read_ledger as read_lines

    return read_lines(Path(store_root) / LEDGER)


def record_use(store, lock: dict[str, Any], run_id: str) -> None:
    """Append this run's lock to the ledger of ``store`` (a :class:`runtime.store.TaskStore`).

    Raises
    ------
    runtime.store.StoreError
        The store cannot be written.
    """
    store.append_line(LEDGER, json.dumps({"audit": lock.get("audit"), **lock_identity(lock), "run_id": run_id},
                                         sort_keys=True))


def git_lock_history(lock_path: Path, limit: int = 200) -> list[tuple[dict[str, Any], str]]:
    """Every committed version of the lock file (newest first) with its commit, while the repository
    versions the lock (it is in HEAD or in the index); [] outside git or when the lock is not versioned.

    A lock that the repository stopped versioning by a commit (``git rm`` and ``.gitignore``) leaves that
    decision in the history; its older versions then no longer count, and the task store's ledger is the
    witness of the locks runs used (this repository's own example lock was versioned once, then ignored).
    """
    import subprocess

    from runtime.provenance.sign import _git

    folder, name = Path(lock_path).resolve().parent, Path(lock_path).name
    try:
        commits = _git(folder, "log", f"-{limit}", "--format=%H", "--", name).split()
        versioned = bool(_git(folder, "ls-files", "--", name).strip())
        if not versioned and commits:
            versioned = subprocess.run(["git", "-C", str(folder), "cat-file", "-e", f"HEAD:./{name}"],
                                       capture_output=True).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return []
    if not versioned:
        return []
    out = []
    for c in commits:
        try:
            text = _git(folder, "show", f"{c}:./{name}")
            out.append((json.loads(text), c))
        except (OSError, subprocess.SubprocessError, ValueError):
            continue  # deleted in that commit, or not JSON
    return out


# ------------------------------------------------------------------------------ the engagement's history

#: The ledger line's ``event`` of a sealed run (issue 37 §3); a line without ``event`` is a run's start.
SEALED = "sealed"


def record_seal(store, lock: dict[str, Any], run_id: str, *, sealed_at: str, signer: str | None) -> None:
    """Append this run's seal to the ledger of ``store`` (a :class:`runtime.store.TaskStore`): the lock's
    identity, the run id, the seal time (UTC) and the signer (None for an unsigned run).

    Raises
    ------
    runtime.store.StoreError
        The store cannot be written.
    """
    store.append_line(LEDGER, json.dumps({"audit": lock.get("audit"), **lock_identity(lock), "run_id": run_id,
                                          "event": SEALED, "sealed_at": sealed_at, "signer": signer},
                                         sort_keys=True))


def sealed_runs(store_root: Path | None, audit: str | None) -> dict[str, list[dict[str, Any]]]:
    """The runs of audit ``audit`` sealed under each lock, from the task store's ledger (:data:`LEDGER`).

    Returns
    -------
    dict
        Lock creation time -> the runs sealed under it, oldest seal first, each ``{run_id, sealed_at,
        signer}`` (``signer`` None: unsigned); a run sealed twice (a resumed seal) is listed once, at
        its first seal. Runs started but never sealed are not listed.
    """
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in read_ledger(store_root) if store_root else []:
        if entry.get("event") != SEALED or entry.get("audit") != audit:
            continue
        when, run_id = entry.get("created_at"), entry.get("run_id")
        if not isinstance(when, str) or not isinstance(run_id, str):
            continue
        out.setdefault(when, {}).setdefault(run_id, {"run_id": run_id, "sealed_at": entry.get("sealed_at"),
                                                     "signer": entry.get("signer")})
    return {k: sorted(v.values(), key=lambda r: (str(r["sealed_at"]), r["run_id"])) for k, v in out.items()}


def engagement(lock: dict[str, Any], *, store_root: Path | None, run_id: str) -> dict[str, Any]:
    """The engagement's history as a new run starts (issue 37 §3; written into ``run.json`` before the
    seal, so a run folder carried elsewhere keeps it): the runs sealed under each lock this lock's
    amendments superseded, and the runs already sealed under this lock.

    Returns
    -------
    dict
        ``superseded``: one entry per amendment, oldest first: ``amendment`` (1-based), ``created_at``
        and ``spec_digest`` (hex) of the superseded lock, ``runs`` (:func:`sealed_runs`; [] for none);
        ``this_lock``: ``created_at``, ``runs`` sealed under it before this run, ``run_number`` (this
        run's place under the lock, 1 for the first).
    """
    runs = sealed_runs(store_root, lock.get("audit"))
    superseded = []
    for i, a in enumerate(lock.get("amendments") or [], start=1):
        prev = a.get("previous") or {}
        digest = prev.get("spec_digest")
        superseded.append({"amendment": i, "created_at": prev.get("created_at"),
                           "spec_digest": digest.get("digest") if isinstance(digest, dict) else digest,
                           "runs": runs.get(prev.get("created_at"), [])})
    mine = [r for r in runs.get(lock.get("created_at"), []) if r["run_id"] != run_id]
    return {"superseded": superseded,
            "this_lock": {"created_at": lock.get("created_at"), "runs": mine, "run_number": len(mine) + 1}}
