"""The sealed manifest: the DSSE envelope of ``manifest.dsse.json`` (its strict shape, the Ed25519
signatures of the seal and of countersigners), the in-toto Statement it signs, every subject's sha256
against the run folder (``report.pdf`` by its sealed revision), the run id, and the RFC 3161 timestamps
of ``manifest.timestamps.json``."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

from compiler.hashing import canonical_json, file_digest
from runtime.provenance import keys as K
from runtime.provenance.sign import (COUNTERSIGNATURES, ENVELOPE, MANIFEST, PAYLOAD_TYPE, PREDICATE_TYPE,
                                     STATEMENT_TYPE, TIMESTAMPS, artifact_paths, pae, render_json)
from runtime.provenance.verify.common import Report, _utc, _when
from runtime.provenance.verify.trust import Trust, _asn1_trust


def _b64(text: Any) -> bytes:
    if not isinstance(text, str):
        raise ValueError("not a string")
    return base64.b64decode(text, validate=True)


#: Keys of a DSSE envelope (https://github.com/secure-systems-lab/dsse, envelope.md) and of each of
#: its signatures; nothing else is accepted. A later countersignature adds signatures, not keys.
ENVELOPE_KEYS = frozenset({"payload", "payloadType", "signatures"})
SIGNATURE_KEYS = frozenset({"keyid", "sig"})


def envelope_problems(env: Any) -> str:
    """Why ``env`` is not a DSSE envelope of the strict shape audit-compiler writes ('' when it is):
    exactly the keys :data:`ENVELOPE_KEYS`, string payload and payloadType, a non-empty list of
    signatures, each exactly :data:`SIGNATURE_KEYS` with string values."""
    if not isinstance(env, dict):
        return "the top level is not a JSON object"
    if set(env) != ENVELOPE_KEYS:
        extra, missing = sorted(set(env) - ENVELOPE_KEYS), sorted(ENVELOPE_KEYS - set(env))
        return "; ".join(x for x in (f"unknown field(s) {', '.join(extra)}" if extra else "",
                                     f"missing field(s) {', '.join(missing)}" if missing else "") if x)
    if not isinstance(env["payload"], str) or not isinstance(env["payloadType"], str):
        return "payload and payloadType must be strings"
    sigs = env["signatures"]
    if not isinstance(sigs, list) or not sigs:
        return "signatures must be a non-empty list"
    for i, sig in enumerate(sigs, 1):
        if not isinstance(sig, dict) or set(sig) != SIGNATURE_KEYS:
            keys = sorted(sig) if isinstance(sig, dict) else type(sig).__name__
            return f"signature {i} must have exactly the fields keyid and sig (has {keys})"
        if not all(isinstance(v, str) for v in sig.values()):
            return f"signature {i}: keyid and sig must be strings"
    return ""


def check_envelope(run_dir: Path, trust: Trust, report: Report) -> dict[str, Any] | None:
    """Verify ``manifest.dsse.json``; return the signed Statement, or None (failures recorded)."""
    path = run_dir / ENVELOPE
    if not path.is_file():
        report.fail(ENVELOPE, "missing: the run is not signed (was `audit execute` run without keys? see `audit keygen`)")
        return None
    raw = path.read_bytes()
    try:
        env = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        report.fail(ENVELOPE, f"not a readable DSSE envelope ({type(err).__name__}: {err})")
        return None
    shape = envelope_problems(env)
    if shape:
        report.fail(ENVELOPE, f"not a DSSE envelope of the expected shape: {shape}")
        return None
    payload_type, sigs = env["payloadType"], env["signatures"]
    try:
        payload = _b64(env["payload"])
    except (ValueError, binascii.Error) as err:
        report.fail(ENVELOPE, f"payload is not base64 ({err})")
        return None
    if payload_type != PAYLOAD_TYPE:
        report.fail(ENVELOPE, f"payloadType is {payload_type!r}, expected {PAYLOAD_TYPE!r}")
    if trust.public_key is None:
        report.fail(ENVELOPE, "no public key to check the signature with (pass --pubkey FILE)")
        return None
    from cryptography.exceptions import InvalidSignature

    keyid = K.key_id(trust.public_key)
    counter = countersigner_keys(run_dir, report)
    good = 0
    for i, s in enumerate(sigs):
        key, kid, src = trust.public_key, keyid, trust.source
        if i > 0 and s["keyid"] != keyid and s["keyid"] in counter:  # a countersignature (`audit sign`)
            key, kid, src = counter[s["keyid"]], s["keyid"], COUNTERSIGNATURES
        try:
            key.verify(_b64(s["sig"]), pae(str(payload_type), payload))
        except (InvalidSignature, ValueError, binascii.Error):
            which = "the signature" if len(sigs) == 1 else f"signature {i + 1} of {len(sigs)} (every one must verify)"
            report.fail(ENVELOPE, f"{which} does not verify with the Ed25519 key {kid[:16]}... ({src})")
            continue
        if s["keyid"] != kid:
            report.fail(ENVELOPE, f"keyid {s['keyid']!r} does not name the key that signed it ({kid[:16]}...)")
            continue
        if key is trust.public_key:
            good += 1
        else:
            report.dsse_countersigners.append(kid)
    if not good:
        return None
    if raw != render_json(env):
        report.fail(ENVELOPE, "its bytes differ from the envelope audit-compiler wrote (edited after signing)")
    try:
        stmt = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        report.fail(ENVELOPE, f"the signed payload is not JSON ({err})")
        return None
    if canonical_json(stmt) != payload:
        report.fail(ENVELOPE, "the signed payload is not RFC 8785 canonical JSON")
    if (not isinstance(stmt, dict) or stmt.get("_type") != STATEMENT_TYPE
            or stmt.get("predicateType") != PREDICATE_TYPE or statement_problems(stmt)):
        why = statement_problems(stmt) if isinstance(stmt, dict) else "not a JSON object"
        report.fail(ENVELOPE, f"not an in-toto Statement v1 with predicateType {PREDICATE_TYPE}"
                              + (f" ({why})" if why else ""))
        return None
    report.notes.append(f"DSSE signature: valid, Ed25519 key {keyid[:16]}... ({trust.source})")
    return stmt


def countersigner_keys(run_dir: Path, report: Report) -> dict[str, Any]:
    """Ed25519 public keys of ``countersignatures.json`` by key id (each key must hash to its id)."""
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    from runtime.provenance.sign import read_countersignatures

    try:
        entries = read_countersignatures(run_dir)
    except (OSError, ValueError) as err:
        report.fail(COUNTERSIGNATURES, f"cannot be read ({type(err).__name__}: {err})")
        return {}
    out = {}
    for i, e in enumerate(entries, 1):
        try:
            key = load_pem_public_key(str(e["public_key"]).encode("ascii"))
            kid = K.key_id(key)
        except (KeyError, ValueError, TypeError, AttributeError) as err:
            report.fail(COUNTERSIGNATURES, f"entry {i}: its public key cannot be read ({type(err).__name__}: {err})")
            continue
        if kid != e.get("keyid"):
            report.fail(COUNTERSIGNATURES, f"entry {i}: its public key has id {kid[:16]}..., not {str(e.get('keyid'))[:16]}...")
            continue
        out[kid] = key
    return out


def statement_problems(stmt: dict[str, Any]) -> str:
    """Why the signed Statement's subjects or manifest cannot be read ('' when they can).

    A subject's ``annotations`` (issue 27 §4, :func:`runtime.provenance.sign.statement`) are optional (Statements
    written before have none); when present, ``bytes`` is a non-negative integer and ``sealedRevision``
    a boolean that only ``report.pdf`` may set."""
    from runtime.provenance.sign import SEALED_PDF

    subjects = stmt.get("subject")
    if not isinstance(subjects, list) or not all(
            isinstance(x, dict) and isinstance(x.get("name"), str) and isinstance(x.get("digest"), dict)
            and isinstance(x["digest"].get("sha256"), str) for x in subjects):
        return "subject must be a list of {name, digest: {sha256}}"
    for x in subjects:
        if "annotations" not in x:
            continue
        ann = x["annotations"]
        if (not isinstance(ann, dict) or type(ann.get("bytes")) is not int or ann["bytes"] < 0
                or not isinstance(ann.get("sealedRevision", False), bool)):
            return (f"subject {x['name']!r}: annotations must be {{bytes: a non-negative integer, "
                    f"sealedRevision: true or false}}")
        if ann.get("sealedRevision") and x["name"] != SEALED_PDF:
            return f"subject {x['name']!r}: only {SEALED_PDF} may bind a sealed revision"
    pred = stmt.get("predicate")
    if not isinstance(pred, dict) or not isinstance(pred.get("artifacts", []), list) or not all(
            isinstance(a, dict) and isinstance(a.get("path"), str) and isinstance(a.get("sha256"), str)
            for a in pred.get("artifacts", [])):
        return "predicate must be the manifest, with artifacts as a list of {path, sha256}"
    return ""


def check_artifacts(run_dir: Path, stmt: dict[str, Any], report: Report) -> None:
    """Each signed subject exists with its sha256; no unsigned file was added; manifest.json matches.

    ``report.pdf`` is checked by its sealed revision (issue 27 §4, reports/README.md): the sha256 of its
    first ``annotations.bytes`` bytes (before issue 27: the manifest's ``bytes``); later bytes are
    incremental updates that :func:`~runtime.provenance.verify.pdf.check_pdf` and
    :func:`~runtime.provenance.verify.pdf.check_countersignatures` judge."""
    manifest = stmt.get("predicate") or {}
    mpath = run_dir / MANIFEST
    if not mpath.is_file():
        report.fail(MANIFEST, "missing")
    elif mpath.read_bytes() != render_json(manifest):
        report.fail(MANIFEST, f"differs from the manifest signed in {ENVELOPE} (edited after signing)")
    from runtime.provenance.sign import SEALED_PDF

    subjects = {s["name"]: s["digest"]["sha256"] for s in stmt.get("subject", [])}
    listed = {a["path"]: a["sha256"] for a in manifest.get("artifacts", [])}
    sizes = {a["path"]: a.get("bytes") for a in manifest.get("artifacts", [])}
    # issue 27 §4: the signed length is the subject's annotations.bytes, and only a subject that says
    # sealedRevision binds a prefix; a Statement written before has no annotations: the manifest's length,
    # and report.pdf may be longer (the rule verify applied then)
    notes = {s["name"]: s.get("annotations") for s in stmt.get("subject", [])}
    claimed = {n: a["bytes"] if a else sizes.get(n) for n, a in notes.items()}
    sealed = {n: n == SEALED_PDF and (a.get("sealedRevision") is True if a else True) for n, a in notes.items()}
    if listed != subjects or any(claimed[n] != sizes.get(n) for n in claimed):
        report.fail(ENVELOPE, "the Statement's subjects and the manifest's artifacts disagree")
    for name, want in sorted(subjects.items()):
        path = run_dir / name
        if not path.is_file():
            report.fail(name, "missing (listed in the signed manifest)")
            continue
        got = file_digest(path)["digest"]
        if got != want and sealed[name] and sealed_prefix_matches(path, want, claimed[name]):
            report.sealed_pdf_bytes = claimed[name]  # countersigned: check_pdf checks what follows
            report.notes.append(f"report.pdf: its first {claimed[name]} bytes are the sealed report (sha256 {want[:16]}...); "
                                f"{path.stat().st_size - claimed[name]} bytes of later revisions follow")
        elif got != want and sealed[name] and isinstance(claimed[name], int) and path.stat().st_size < claimed[name]:
            report.fail(name, f"{path.stat().st_size} bytes, shorter than its signed sealed revision "
                              f"({claimed[name]} bytes): truncated after signing")
        elif got != want:
            report.fail(name, f"sha256 {got[:16]}... differs from the signed {want[:16]}... (modified after signing)")
    for name in artifact_paths(run_dir):
        if name not in subjects:
            report.fail(name, "not in the signed manifest (added after signing)")
    report.notes.append(f"artifacts: {len(subjects)} files checked (sha256) against the signed manifest")


def sealed_prefix_matches(path: Path, want: str, size: Any) -> bool:
    """The first ``size`` bytes of ``path`` (longer than that) have sha256 ``want``: the sealed PDF,
    followed by incremental updates (countersignatures)."""
    if not isinstance(size, int) or path.stat().st_size <= size:
        return False
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        h.update(fh.read(size))
    return h.hexdigest() == want


def check_run_id(run_dir: Path, manifest: dict[str, Any], run: dict[str, Any] | None, report: Report) -> None:
    """The signed run id is the one ``run.json`` records; a folder renamed after signing still
    verifies, and the note says which run it is."""
    signed = manifest.get("run_id")
    if run is not None and run.get("run_id") != signed:
        report.fail("run.json", f"run id {run.get('run_id')!r} differs from the signed run id {signed!r}")
    renamed = f" (the folder is named {run_dir.name!r})" if run_dir.name != signed else ""
    report.notes.append(f"run: audit {manifest.get('audit')!r}, signed run id {signed!r}{renamed}")


def check_timestamps(run_dir: Path, stmt: dict[str, Any], trust: Trust, report: Report,
                     now: dt.datetime | None = None) -> None:
    """``manifest.timestamps.json``: present exactly when the signed manifest says the envelope was
    timestamped; each token covers sha256 of one envelope signature, by a trusted TSA."""
    promised = (((stmt.get("predicate") or {}).get("signing") or {}).get("manifest") or {}).get("timestamps")
    path = run_dir / TIMESTAMPS
    if not path.is_file():
        if promised:
            report.fail(TIMESTAMPS, "missing: the signed manifest says the envelope was timestamped")
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = data["timestamps"]
        if not isinstance(entries, list) or not entries:
            report.fail(TIMESTAMPS, "holds no timestamp (an empty list): a timestamp file is written only with "
                                    "timestamps in it")
            return
        env = json.loads((run_dir / ENVELOPE).read_text(encoding="utf-8"))
        sigs = {s["keyid"]: hashlib.sha256(base64.b64decode(s["sig"])).digest() for s in env["signatures"]}
    except (OSError, ValueError, KeyError, TypeError, binascii.Error) as err:
        report.fail(TIMESTAMPS, f"cannot be read ({type(err).__name__}: {err})")
        return
    from runtime.provenance.trusted_time import check_token

    anchors, others = _asn1_trust(trust)
    seen_sealing = False
    for i, e in enumerate(entries if isinstance(entries, list) else [], 1):
        try:
            digest, token = sigs.get(e["keyid"]), base64.b64decode(e["token"], validate=True)
        except (KeyError, TypeError, ValueError, binascii.Error) as err:
            report.fail(TIMESTAMPS, f"entry {i} cannot be read ({type(err).__name__}: {err})")
            continue
        if digest is None:
            report.fail(TIMESTAMPS, f"entry {i} names keyid {str(e.get('keyid'))[:16]}..., which signed no envelope signature")
            continue
        sealing = e["keyid"] not in report.dsse_countersigners
        if sealing and not promised:
            report.fail(TIMESTAMPS, f"entry {i}: the signed manifest promises no timestamp of its signature (added after signing)")
            continue
        seen_sealing = seen_sealing or sealing
        got = check_token(token, digest, anchors=anchors, others=others, now=now)
        if got.problems:
            report.fail(TIMESTAMPS, f"entry {i}: " + "; ".join(got.problems))
            continue
        report.notes.append(f"manifest signature {e['keyid'][:16]}... timestamped {_when(_utc(got.time))} by {got.tsa}")
        if sealing:
            report.sealed_at = _utc(got.time)
    if promised and not seen_sealing and not any(f.file == TIMESTAMPS for f in report.failures):
        report.fail(TIMESTAMPS, "holds no timestamp of the sealing signature")
