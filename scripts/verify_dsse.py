#!/usr/bin/env python3
"""Reference verifier of an audit-compiler run folder without audit-compiler (issue 27 §4).

It uses securesystemslib's DSSE implementation and :mod:`hashlib` only (and the standard library's
json, os, pathlib, argparse), so a reviewer can check a run with code that is not ours:

    pip install securesystemslib
    python scripts/verify_dsse.py RUN_DIR --pubkey AUDITOR_manifest.pub [--countersigner REVIEWER.pub ...]

What it checks (the rule is written in reports/README.md, "Verifying a run independently"):

1. ``manifest.dsse.json`` is a DSSE envelope (github.com/secure-systems-lab/dsse, protocol v1.0.2) of
   payloadType ``application/vnd.in-toto+json`` with a valid Ed25519 signature by the auditor's key
   (key id: sha256 of the raw 32-byte public key); each ``--countersigner`` key must have signed too.
2. The payload is an in-toto Statement v1 (github.com/in-toto/attestation, spec/v1) with predicateType
   ``urn:audit-compiler:manifest:v1``; ``manifest.json`` holds the predicate as
   ``json.dumps(predicate, indent=2, ensure_ascii=False)`` plus a newline.
3. Each subject (an in-toto ResourceDescriptor): the file ``name`` exists as a regular file in the run
   folder and the sha256 of its first ``annotations.bytes`` bytes is ``digest.sha256``. It must be
   exactly that long, except the subject with ``annotations.sealedRevision: true`` (``report.pdf``): its
   digest binds the PDF as sealed, and ``audit sign`` appends countersignatures and validation data as
   incremental updates (ISO 32000-1:2008 §7.5.6) that the PDF's own signatures cover, not this
   Statement. Statements written before issue 27 have no annotations: ``report.pdf``'s sealed length is
   then the predicate's ``artifacts[].bytes``.
4. Every other file of the folder is a subject or a seal file (``manifest.json``, ``manifest.dsse.json``,
   ``manifest.timestamps.json``, ``countersignatures.json``); symbolic links and non-regular files fail
   (and are never opened).

Not checked here: the PDF signatures and the bytes after the sealed revision (use a PDF signature
validator, e.g. poppler's ``pdfsig``, or ``audit verify``), the RFC 3161 tokens of
``manifest.timestamps.json`` and the certificates of ``countersignatures.json``.

The public key files must lie outside the run folder: a key shipped inside it is evidence that nothing
changed since signing, not proof of who signed (issue 27 §1); get the auditor's key by another channel.

Exit status: 0 verified; 6 a check failed, one ``FAIL file: reason`` line each on stderr (as
``audit verify``); 2 bad usage (a key file missing, unreadable or inside the run folder).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import stat
import sys
from pathlib import Path, PurePosixPath

ENVELOPE, MANIFEST = "manifest.dsse.json", "manifest.json"
#: Files that seal a run folder and so are not subjects of its Statement.
SEAL_FILES = frozenset({MANIFEST, ENVELOPE, "manifest.timestamps.json", "countersignatures.json"})
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "urn:audit-compiler:manifest:v1"
#: The one subject whose file may be longer than its digest's bytes (incremental PDF updates).
SEALED_PDF = "report.pdf"
EXIT_OK, EXIT_USAGE, EXIT_FAILED = 0, 2, 6


class UsageError(Exception):
    """A key file that cannot serve as a pin (missing, unreadable, not Ed25519, inside the run folder)."""


def load_key(pem: Path, run_dir: Path):
    """The securesystemslib key of the Ed25519 public key in ``pem`` (PEM SubjectPublicKeyInfo), its key
    id the sha256 of the raw 32-byte key, as audit-compiler documents.

    Raises
    ------
    UsageError
        ``pem`` is missing, unreadable, not an Ed25519 public key, or resolves inside ``run_dir``.
    """
    # securesystemslib has no loader for a bare PEM public key file: SSlibKey.from_crypto takes a key of
    # `cryptography`, securesystemslib's own dependency, so that library parses the PEM here.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key
    from securesystemslib.signer import SSlibKey

    where = pem.resolve()
    if where.is_relative_to(run_dir.resolve()):
        raise UsageError(f"{pem}: inside the run folder: evidence, not a pin; give the signer's public key "
                         "obtained by another channel")
    try:
        key = load_pem_public_key(where.read_bytes())
    except (OSError, ValueError, TypeError) as err:
        raise UsageError(f"{pem}: not a readable PEM public key ({type(err).__name__}: {err})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise UsageError(f"{pem}: not an Ed25519 public key")
    keyid = hashlib.sha256(key.public_bytes_raw()).hexdigest()
    return SSlibKey.from_crypto(key, keyid=keyid, scheme="ed25519")


def _regular(path: Path) -> bool:
    """Whether ``path`` is a regular file and not a link (lstat: never opens it, so a FIFO cannot block)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def sha256_prefix(path: Path, size: int) -> tuple[str, int]:
    """sha256 (hex) of the first ``size`` bytes of ``path`` and how many bytes were read (fewer when the
    file is shorter)."""
    h, left = hashlib.sha256(), size
    with open(path, "rb") as fh:
        while left:
            chunk = fh.read(min(left, 1 << 20))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest(), size - left


def _safe_name(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return bool(name) and not name.startswith("/") and "\\" not in name and ".." not in parts and "." not in parts


def check_envelope(run_dir: Path, auditor, countersigners=()) -> tuple[dict | None, list[str]]:
    """The signed Statement and the envelope's problems (DSSE signature, payload type, Statement shape)."""
    from securesystemslib.dsse import Envelope

    path = run_dir / ENVELOPE
    if not _regular(path):
        return None, [f"{ENVELOPE}: missing or not a regular file"]
    try:
        raw = json.loads(path.read_bytes())
        envelope = Envelope.from_dict(dict(raw))
    except Exception as err:  # any failure to parse the envelope is a failed check
        return None, [f"{ENVELOPE}: not a DSSE envelope ({type(err).__name__}: {err})"]
    problems = []
    if envelope.payload_type != PAYLOAD_TYPE:
        problems.append(f"{ENVELOPE}: payloadType {envelope.payload_type!r}, expected {PAYLOAD_TYPE!r}")
    for who, key in [("the auditor", auditor), *(("countersigner", k) for k in countersigners)]:
        try:
            envelope.verify([key], threshold=1)
        except Exception as err:  # securesystemslib's VerificationError, or anything else: not verified
            problems.append(f"{ENVELOPE}: no valid signature by {who}'s key {key.keyid[:16]}... ({err})")
    if problems:
        return None, problems
    try:
        stmt = json.loads(envelope.payload)
    except ValueError as err:
        return None, [f"{ENVELOPE}: the signed payload is not JSON ({err})"]
    if not isinstance(stmt, dict) or stmt.get("_type") != STATEMENT_TYPE or stmt.get("predicateType") != PREDICATE_TYPE:
        return None, [f"{ENVELOPE}: not an in-toto Statement v1 with predicateType {PREDICATE_TYPE}"]
    subjects = stmt.get("subject")
    if not isinstance(subjects, list) or not all(
            isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("digest"), dict)
            and isinstance(s["digest"].get("sha256"), str) for s in subjects):
        return None, [f"{ENVELOPE}: the Statement's subject is not a list of {{name, digest: {{sha256}}}}"]
    return stmt, []


def _sealed_length(stmt: dict, name: str) -> object:
    """A pre-issue-27 Statement: the predicate's recorded length of ``name`` (the sealed revision)."""
    pred = stmt.get("predicate")
    arts = pred.get("artifacts") if isinstance(pred, dict) else None
    return next((a.get("bytes") for a in arts or [] if isinstance(a, dict) and a.get("path") == name), None)


def check_subject(run_dir: Path, stmt: dict, subject: dict, countersigned: bool = True) -> tuple[list[str], str | None]:
    """Problems of one subject, and for a sealed revision a note on the bytes that follow it. Bytes after the
    sealed revision are allowed only when ``countersigned`` (the envelope has more than the auditor's
    signature): without a countersignature ``report.pdf`` is exactly its sealed length."""
    name, want = subject["name"], subject["digest"]["sha256"]
    if not _safe_name(name):
        return [f"{ENVELOPE}: subject name {name!r} is not a relative path inside the run folder"], None
    ann = subject.get("annotations")
    if ann is None and "annotations" not in subject:  # a Statement written before issue 27
        size = _sealed_length(stmt, name) if name == SEALED_PDF else None
        sealed = name == SEALED_PDF
    elif isinstance(ann, dict) and type(ann.get("bytes")) is int and ann["bytes"] >= 0 \
            and isinstance(ann.get("sealedRevision", False), bool):
        size, sealed = ann["bytes"], ann.get("sealedRevision", False)
    else:
        return [f"{name}: the subject's annotations are not {{bytes: integer >= 0, sealedRevision: boolean}}"], None
    if sealed and name != SEALED_PDF:
        return [f"{name}: only {SEALED_PDF} may bind a sealed revision"], None
    path = run_dir / name
    if not _regular(path):
        return [f"{name}: missing or not a regular file (a signed subject)"], None
    total = os.lstat(path).st_size
    if size is None:  # no length claimed (an old Statement, a file other than report.pdf): the whole file
        size = total
    if not isinstance(size, int) or total < size:
        return [f"{name}: {total} bytes, shorter than the {size} bytes signed (truncated)"], None
    if total > size and not sealed:
        return [f"{name}: {total} bytes, longer than the {size} bytes signed (appended to)"], None
    if total > size and not countersigned:
        return [f"{name}: {total} bytes, longer than its sealed revision of {size} bytes, and nobody countersigned "
                "the envelope (appended to after sealing)"], None
    got, _ = sha256_prefix(path, size)
    if got != want:
        what = f"its first {size} bytes (the sealed revision)" if sealed else "its sha256"
        return [f"{name}: {what} {got[:16]}... differ from the signed {want[:16]}... (modified after signing)"], None
    if total > size:
        return [], (f"{name}: sealed revision of {size} bytes verified; {total - size} bytes of later revisions "
                    "follow (countersignatures, validation data: check them with a PDF signature validator)")
    return [], None


def problems_and_notes(run_dir: Path, auditor, countersigners=()) -> tuple[list[str], list[str]]:
    """Every problem (``"file: reason"``) and note of the run folder ``run_dir`` checked against the keys."""
    stmt, problems = check_envelope(run_dir, auditor, countersigners)
    if stmt is None:
        return problems, []
    notes = []
    manifest = run_dir / MANIFEST
    expected = (json.dumps(stmt.get("predicate"), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    if not _regular(manifest):
        problems.append(f"{MANIFEST}: missing or not a regular file")
    elif manifest.read_bytes() != expected:
        problems.append(f"{MANIFEST}: differs from the signed predicate")
    try:  # check_envelope read it already; a countersignature adds a signature to it (audit sign)
        countersigned = len(json.loads((run_dir / ENVELOPE).read_text(encoding="utf-8"))["signatures"]) > 1
    except (OSError, ValueError, KeyError, TypeError):
        countersigned = False
    named = set()
    for subject in stmt["subject"]:
        if subject["name"] in named:
            problems.append(f"{subject['name']}: named by two subjects")
        named.add(subject["name"])
        bad, note = check_subject(run_dir, stmt, subject, countersigned)
        problems += bad
        notes += [note] if note else []
    for folder, dirs, files in os.walk(run_dir, followlinks=False):
        for entry in sorted(dirs + files):
            path = Path(folder) / entry
            rel = path.relative_to(run_dir).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                problems.append(f"{rel}: a symbolic link in the run folder")
            elif stat.S_ISDIR(mode):
                continue
            elif not stat.S_ISREG(mode):
                problems.append(f"{rel}: not a regular file")
            elif rel not in named and rel not in SEAL_FILES:
                problems.append(f"{rel}: not a signed subject (added after signing)")
    return problems, notes


def problems(run_dir: Path, pubkey: Path, countersigners: tuple[Path, ...] | list[Path] = ()) -> list[str]:
    """What is wrong with the run folder ``run_dir`` sealed by the auditor's Ed25519 key in ``pubkey``
    ([] when nothing); ``countersigners`` are public key files of reviewers who must have signed too.

    Raises
    ------
    UsageError
        A key file is missing, unreadable, not Ed25519 or inside ``run_dir``.
    """
    run_dir = Path(run_dir)
    keys = [load_key(Path(p), run_dir) for p in (pubkey, *countersigners)]
    return problems_and_notes(run_dir, keys[0], keys[1:])[0]


def main(argv: list[str] | None = None) -> int:
    """Command line: verify RUN_DIR; print ``verified: ...`` (exit 0) or the failures (exit 6)."""
    ap = argparse.ArgumentParser(description="Verify an audit-compiler run folder with securesystemslib "
                                             "and hashlib only (DSSE envelope, in-toto Statement, files).")
    ap.add_argument("run_dir", type=Path, help="the run folder (reports/<audit>/<run id>)")
    ap.add_argument("--pubkey", type=Path, required=True,
                    help="the auditor's Ed25519 public key (PEM), from outside the run folder")
    ap.add_argument("--countersigner", type=Path, action="append", default=[], metavar="PUBKEY",
                    help="a reviewer's Ed25519 public key (PEM) that must also have signed; repeatable")
    args = ap.parse_args(argv)
    if not args.run_dir.is_dir():
        print(f"FAIL {args.run_dir}: not a folder", file=sys.stderr)
        return EXIT_USAGE
    try:
        keys = [load_key(p, args.run_dir) for p in (args.pubkey, *args.countersigner)]
    except UsageError as err:
        print(f"FAIL {err}", file=sys.stderr)
        return EXIT_USAGE
    found, notes = problems_and_notes(args.run_dir, keys[0], keys[1:])
    for line in notes:
        print(line)
    for line in found:
        print(f"FAIL {line}", file=sys.stderr)
    if found:
        print(f"{len(found)} problem(s): {args.run_dir} does not verify", file=sys.stderr)
        return EXIT_FAILED
    print(f"verified: {args.run_dir} (DSSE signature by {keys[0].keyid[:16]}...; every subject's sha256)")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
