"""``audit verify``: check a run folder (or a lone report.pdf) against its signatures.

For a run folder: the DSSE envelope's Ed25519 signature; that ``manifest.json`` and the envelope are
byte for byte what audit-compiler writes for the signed Statement; every artifact's sha256; that no
file was added; the envelope's RFC 3161 timestamps when the manifest promises them; every PAdES
signature and document timestamp of the PDF (pyHanko: intact, valid, trusted, every certificate valid
at the signing time, the whole file covered by the last one); optionally that a given spec still
resolves to the run's locked digest. Every failure is reported as ``file: reason``; nothing stops at
the first one. Library diagnostics go to :attr:`Report.details` (``audit verify --verbose``).

Signing time (issue 16): a signature with a trusted timestamp and embedded validation data (PAdES
B-LT/B-LTA) is validated at its timestamp's time by pyHanko's AdES engine (ETSI EN 319 102-1), from
the embedded data only, so it still validates after its certificate expires. A signature without one
(PAdES B-B) is dated by the signer's own clock: its certificates must be valid at that claimed time and
now, so it stops validating when the certificate expires.

Trust: the public key and certificates come from ``--pubkey``/``--cert`` (files or folders, several
allowed), else the key directory (``manifest.pub``, ``signer.crt``, ``tsa.crt``), else the copies inside
the run folder. One rule (issue 27): each file is judged by where it resolves; inside the checked run
folder (or a lone PDF's folder) it is evidence, which proves only that nothing changed since signing,
not who signed; only files outside it are pins. Self-signed certificates among them are the trust
anchors (a chain file trusts its root); without any, each pinned certificate is an anchor. A signer is
*pinned* when its validation path holds a pinned certificate (countersigners included: the certificates
of ``countersignatures.json`` are evidence); the seal is pinned when the manifest key is (directly, or
through the pinned sealing certificate whose signed PDF names it). A run folder holds only regular
files and folders: anything else is refused by name and never opened.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.hashing import canonical_json, file_digest
from runtime import keys as K
from runtime.sign import (COUNTERSIGNATURES, ENVELOPE, MANIFEST, PAYLOAD_TYPE, PREDICATE_TYPE, SIGNATURE_FIELD,
                          STATEMENT_TYPE, TIMESTAMPS, artifact_paths, pae, render_json)


@dataclass
class Failure:
    """One failed check: the file it concerns (relative to the verified folder) and why."""

    file: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}"


@dataclass
class Report:
    """Outcome of a verification: ``ok`` when no check failed; ``notes`` are what was checked."""

    failures: list[Failure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    manifest: dict[str, Any] | None = None
    unpinned: list[str] = field(default_factory=list)  # key material taken from the checked files themselves
    #: The seal (a run's manifest key; a lone PDF's sealing signature) chains to a pin (issue 27).
    seal_pinned: bool = False
    #: What was verified against what: the end of ``audit verify``'s last line.
    summary: str = ""
    #: One dict per valid PDF signature, in signing order: field, name, role, organisation, signed_at
    #: (UTC), time_source ("trusted timestamp" or "signer's clock"), tsa (the timestamp's authority), level,
    #: pinned (its certificate chains to a pinned certificate) and, when not, pin_reason.
    signers: list[dict[str, Any]] = field(default_factory=list)
    #: Diagnostics of the signature libraries (pyHanko, pyhanko-certvalidator), shown with --verbose.
    details: list[str] = field(default_factory=list)
    #: Key ids of the countersignatures of manifest.dsse.json that verified (``audit sign``).
    dsse_countersigners: list[str] = field(default_factory=list)
    #: Byte length of report.pdf as sealed, when later revisions (countersignatures) follow it.
    sealed_pdf_bytes: int | None = None
    #: The trusted time of the seal (the sealing envelope signature's timestamp), when there is one.
    sealed_at: dt.datetime | None = None

    @property
    def ok(self) -> bool:
        return not self.failures

    def fail(self, file: str, reason: str) -> None:
        self.failures.append(Failure(file, reason))


@dataclass
class Trust:
    """The public key (Ed25519) and certificates a verification uses, and where they came from.

    One rule decides what is a pin (issue 27): a key or certificate file that resolves inside the checked
    run folder (or a lone PDF's folder) is evidence (it proves nothing changed since signing, not who
    signed), whatever option, variable or configuration named it; only files outside it are pins.
    ``certs`` holds every certificate (pins and evidence), ``pinned_certs`` the pins among them.
    """

    public_key: Any = None
    certs: list = field(default_factory=list)
    pinned_certs: list = field(default_factory=list)
    source: str = ""
    pub_pinned: bool = True
    problems: list = field(default_factory=list)  # (file, reason) for unreadable key material in the run folder
    #: What the checked folder is called in notes: "run folder" or "PDF's folder".
    folder_word: str = "run folder"

    @property
    def pinned_ders(self) -> set[bytes]:
        from cryptography.hazmat.primitives.serialization import Encoding

        return {c.public_bytes(Encoding.DER) for c in self.pinned_certs}


def _regular(path: Path) -> bool:
    """``path`` is a regular file, judged without following a symbolic link and without opening it (a
    FIFO in a run folder must never be opened: it would block)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _cert_files(path: Path) -> list[Path]:
    """A certificate file, or every ``*.pem``/``*.crt``/``*.cer``/``*.der`` file of a folder (sorted)."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in (".pem", ".crt", ".cer", ".der"))
    return [path]


def resolve_trust(*, pubkey: Path | None, cert: Path | list[Path] | None, key_dir: Path | None,
                  run_dir: Path | None, pdf: Path | None = None) -> Trust:
    """Pick the key and certificates: explicit files, else the key directory, else the run folder's copies.

    ``cert`` is one certificate file or folder, or a list of them (``--cert`` given several times); every
    certificate found is in the trust set. The key directory (``--key-dir``, else ``$AUDIT_KEY_DIR`` or the
    default one) contributes ``manifest.pub`` when no ``pubkey`` is given, and ``signer.crt`` and, when
    present, ``tsa.crt`` (the time-stamping authority pinned by ``audit keygen --tsa``) when no ``cert``
    is. Each file is judged by where it resolves: inside ``run_dir`` (or the folder of the lone ``pdf``)
    it is evidence, never a pin. Without any pinned certificate the run folder's own copies (and the
    countersigners' certificates of ``countersignatures.json``) are added as evidence.

    Raises
    ------
    runtime.keys.KeyMaterialError
        A given key or certificate file cannot be read, or a given folder holds no certificate.
    """
    t = Trust()
    checked = Path(run_dir) if run_dir is not None else (Path(pdf).parent if pdf is not None else None)
    t.folder_word = "run folder" if run_dir is not None else "PDF's folder"
    inside = _inside(checked) if checked is not None else (lambda _p: False)
    kd = Path(key_dir) if key_dir else K.default_key_dir()
    sources, loaded = [], set()

    def shown(path: Path) -> str:
        return f"{path} (inside the {t.folder_word})" if inside(path) else str(path)

    def add_certs(path: Path) -> None:
        certs = K.load_certs(path)
        loaded.add(Path(path).resolve())
        t.certs += certs
        if not inside(path):
            t.pinned_certs += certs

    pub_file = pubkey if pubkey is not None else (kd / K.MANIFEST_PUB if _regular(kd / K.MANIFEST_PUB) else None)
    if pub_file is not None:
        t.public_key = K.load_public_key(pub_file)
        t.pub_pinned = not inside(pub_file)
        sources.append(shown(pub_file))
    given = [cert] if isinstance(cert, (str, Path)) else list(cert or [])
    for c in given:
        files = _cert_files(c)
        if not files:
            raise K.KeyMaterialError(f"{c}: the folder holds no certificate file (*.pem, *.crt, *.cer, *.der)")
        for f in files:
            add_certs(f)
        sources.append(shown(c))
    if not given:
        for name in (K.SIGNER_CRT, K.TSA_CRT):
            if _regular(kd / name):
                add_certs(kd / name)
                sources.append(shown(kd / name))
    if run_dir is not None:
        run_dir = Path(run_dir)
        if t.public_key is None and _regular(run_dir / K.MANIFEST_PUB):
            try:
                t.public_key = K.load_public_key(run_dir / K.MANIFEST_PUB)
            except K.KeyMaterialError as err:
                t.problems.append((K.MANIFEST_PUB, f"unreadable ({err})"))
            t.pub_pinned = False
            sources.append(f"{K.MANIFEST_PUB} inside the run folder")
        if not t.pinned_certs and _regular(run_dir / K.SIGNER_CRT):
            for name in (K.SIGNER_CRT, K.TSA_CRT):
                if not _regular(run_dir / name) or (run_dir / name).resolve() in loaded:
                    continue
                try:
                    t.certs += K.load_certs(run_dir / name)
                except K.KeyMaterialError as err:
                    t.problems.append((name, f"unreadable ({err})"))
                sources.append(f"{name} inside the run folder")
            t.certs += _countersigner_certs(run_dir, t, sources)
    if t.public_key is None:
        t.pub_pinned = False
    t.source = ", ".join(sources)
    return t


def _inside(folder: Path):
    root = Path(folder).resolve()

    def test(path: Path | str) -> bool:
        return Path(path).resolve().is_relative_to(root)
    return test


def _countersigner_certs(run_dir: Path, t: Trust, sources: list[str]) -> list:
    """The countersigners' certificates of ``countersignatures.json`` (unpinned, like the run's own copies)."""
    from cryptography import x509

    from runtime.sign import read_countersignatures

    certs = []
    if not _regular(run_dir / COUNTERSIGNATURES):
        return certs  # absent, or not a regular file (refused by verify_run, never opened)
    try:
        for e in read_countersignatures(run_dir):
            certs += x509.load_pem_x509_certificates(str(e.get("certificate", "")).encode("ascii"))
    except (OSError, ValueError, TypeError) as err:
        t.problems.append((COUNTERSIGNATURES, f"its certificates cannot be read ({type(err).__name__}: {err})"))
    if certs:
        sources.append(f"the countersigners' certificates in {COUNTERSIGNATURES}")
    return certs


# -------------------------------------------------------------------------------------- envelope

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

    from runtime.sign import read_countersignatures

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

    A subject's ``annotations`` (issue 27 §4, :func:`runtime.sign.statement`) are optional (Statements
    written before have none); when present, ``bytes`` is a non-negative integer and ``sealedRevision``
    a boolean that only ``report.pdf`` may set."""
    from runtime.sign import SEALED_PDF

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


# -------------------------------------------------------------------------------------- run folder

def check_artifacts(run_dir: Path, stmt: dict[str, Any], report: Report) -> None:
    """Each signed subject exists with its sha256; no unsigned file was added; manifest.json matches.

    ``report.pdf`` is checked by its sealed revision (issue 27 §4, reports/README.md): the sha256 of its
    first ``annotations.bytes`` bytes (before issue 27: the manifest's ``bytes``); later bytes are
    incremental updates that :func:`check_pdf` and :func:`check_countersignatures` judge."""
    manifest = stmt.get("predicate") or {}
    mpath = run_dir / MANIFEST
    if not mpath.is_file():
        report.fail(MANIFEST, "missing")
    elif mpath.read_bytes() != render_json(manifest):
        report.fail(MANIFEST, f"differs from the manifest signed in {ENVELOPE} (edited after signing)")
    from runtime.sign import SEALED_PDF

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


#: pyHanko's modification levels a later revision may reach without failing an earlier signature: none,
#: or the validation data and document timestamps of PAdES B-LT/B-LTA (ISO 32000-2 §12.8.4.3).
ALLOWED_LATER_CHANGES = ("NONE", "LTA_UPDATES")
TIME_CLAIMED = "the signing time claimed by the signer (no trusted timestamp)"


@contextlib.contextmanager
def library_logs(report: Report):
    """Send the signature libraries' log records (pyHanko prints tracebacks on a damaged file) to
    ``report.details`` instead of stderr; ``audit verify --verbose`` prints them."""
    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                text += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
            report.details.append(f"{record.name}: {text}")

    handler = _Collect(level=logging.DEBUG)
    loggers = [logging.getLogger(n) for n in ("pyhanko", "pyhanko_certvalidator")]
    saved = [(lg.propagate, lg.level) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.propagate = False
        lg.setLevel(logging.INFO)
    try:
        yield
    finally:
        for lg, (prop, level) in zip(loggers, saved):
            lg.removeHandler(handler)
            lg.propagate, lg.level = prop, level


def _utc(t: dt.datetime | None) -> dt.datetime | None:
    if t is None:
        return None
    return t.replace(tzinfo=dt.timezone.utc) if t.tzinfo is None else t.astimezone(dt.timezone.utc)


def _when(t: dt.datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S UTC") if t else "?"


def _asn1_trust(trust: Trust) -> tuple[list, list]:
    """Trust anchors and other certificates for pyHanko: the pinned certificates' self-signed ones (all of
    them when none is self-signed), and the evidence's self-signed ones, which validate but pin nothing
    (each signer is judged pinned or not afterwards, by its validation path: :func:`judge_pins`)."""
    from cryptography.hazmat.primitives.serialization import Encoding

    from runtime.trusted_time import anchors_and_others, is_self_signed, to_asn1

    pinned = trust.pinned_ders
    pins = [to_asn1(c) for c in trust.pinned_certs]
    evidence = [to_asn1(c) for c in trust.certs if c.public_bytes(Encoding.DER) not in pinned]
    if not pins:
        return anchors_and_others(evidence)
    anchors, others = anchors_and_others(pins)
    return (anchors + [c for c in evidence if is_self_signed(c)], others + [c for c in evidence if not is_self_signed(c)])


def check_pdf(pdf: Path, trust: Trust, report: Report, *, name: str | None = None,
              now: dt.datetime | None = None) -> dict[str, Any] | None:
    """Validate every signature and document timestamp of ``pdf`` (pyHanko); return the facts of the
    first (sealing) signature: field, signer, signed_at, coverage, level, and the PDF's Keywords.

    ``now`` is the verification time (default: the clock); tests move it past a certificate's expiry.
    Each valid signature adds a row to ``report.signers``.
    """
    name = name or pdf.name
    now = _utc(now) or dt.datetime.now(dt.timezone.utc)
    from pyhanko.pdf_utils.reader import PdfFileReader

    try:
        import io

        data = pdf.read_bytes()
        reader = PdfFileReader(io.BytesIO(data), strict=False)
        sigs = reader.embedded_signatures
    except Exception as err:  # noqa: BLE001 - a damaged PDF raises many kinds (PdfReadError, zlib.error, ...)
        report.fail(name, f"not a readable PDF ({type(err).__name__}: {err})")
        return None
    if not sigs:
        report.fail(name, "has no signature")
        return None
    if not data.rstrip(b"\r\n\t\0 ").endswith(b"%%EOF"):  # every revision ends with %%EOF (ISO 32000-1 §7.5.5)
        report.fail(name, "bytes were appended after its last revision's %%EOF (not the entire file is signed)")
    anchors, others = _asn1_trust(trust)
    embedded_only = not anchors  # only the PDF's own embedded certificate is left to check against
    has_dss = "/DSS" in reader.root
    facts: dict[str, Any] = {}
    for i, sig in enumerate(sigs):
        later_doc_ts = any(s.sig_object_type == "/DocTimeStamp" for s in sigs[i + 1:])
        later_sig = any(s.sig_object_type != "/DocTimeStamp" for s in sigs[i + 1:])
        try:
            if sig.sig_object_type == "/DocTimeStamp":
                _check_doc_timestamp(sig, anchors or [sig.signer_cert], others, now, report, name, later_sig)
                continue
            ess = ess_problem(sig)  # the embedded certificate is the one signed with (issue 27 §5)
            if ess is not None:
                report.fail(name, f"signature {sig.field_name!r}: {ess}")
                continue
            row = _check_signature(sig, anchors or [sig.signer_cert], others, now, report, name, has_dss=has_dss,
                                   later_doc_ts=later_doc_ts, later_sig=later_sig)
        except Exception as err:  # noqa: BLE001 - pyHanko raises many kinds on a damaged file; each is a failure
            report.fail(name, f"signature {sig.field_name!r} cannot be validated ({type(err).__name__}: {err})")
            continue
        if row is not None:
            row["embedded_only"] = embedded_only
            report.signers.append(row)
            if not facts:
                facts = {"field": row["field"], "signer": row["name"], "signed_at": row["signed_at"],
                         "coverage": row["coverage"], "level": row["level"]}
    try:
        info = reader.trailer["/Info"] if "/Info" in reader.trailer else {}
        facts["keywords"] = str(info.get("/Keywords", "")) if info else ""
    except Exception as err:  # noqa: BLE001 - a damaged document information dictionary
        report.fail(name, f"its document information cannot be read ({type(err).__name__}: {err})")
        facts["keywords"] = ""
    return facts


def _coverage_problems(sig, status, later_signature: bool = False) -> tuple[str, list[str]]:
    """The signature's coverage, and why it is not acceptable: it covers the whole file, or a whole
    revision followed only by revisions that add validation data and document timestamps (pyHanko's
    difference analysis: modification level NONE or LTA_UPDATES), or, when a later signature follows
    (a countersignature, which must itself verify), revisions that fill signature fields (FORM_FILLING)."""
    cov = getattr(status.coverage, "name", str(status.coverage))
    level = getattr(status.modification_level, "name", str(status.modification_level))
    if cov == "ENTIRE_FILE":
        return cov, []
    later = sig.signed_revision < sig.reader.xrefs.total_revisions - 1
    if cov == "ENTIRE_REVISION" and later:
        if level in ALLOWED_LATER_CHANGES or (later_signature and level == "FORM_FILLING"):
            return cov, []
        return cov, [f"later revisions change the document (modification level {level}), not only validation data"]
    return cov, [f"covers {cov}, not the entire file (bytes were appended after signing)"]


def _check_doc_timestamp(sig, anchors, others, now, report, name, later_sig: bool = False) -> None:
    """A PAdES document timestamp (B-LTA): intact, valid, and its TSA trusted at ``now``."""
    from pyhanko.sign.validation import validate_pdf_timestamp
    from pyhanko_certvalidator import ValidationContext

    vc = ValidationContext(trust_roots=anchors, other_certs=others, allow_fetching=False, moment=now)
    status = validate_pdf_timestamp(sig, validation_context=vc)
    problems = []
    if not status.intact or not status.valid:
        problems.append("not intact or cryptographically invalid")
    elif not status.trusted:
        problems.append(f"its time-stamping authority {status.signing_cert.subject.human_friendly!r} is not trusted "
                        "(give its root certificate with --cert)")
    cov, more = _coverage_problems(sig, status, later_sig)
    problems += more
    if problems:
        report.fail(name, f"document timestamp {sig.field_name!r}: " + "; ".join(problems))
        return
    from runtime.keys import subject_person

    report.notes.append(f"PDF document timestamp ({name}): valid, by {subject_person(status.signing_cert)['name']} "
                        f"at {_when(_utc(status.timestamp))}; it proves the embedded validation data existed then")


def _check_signature(sig, anchors, others, now, report, name, *, has_dss, later_doc_ts, later_sig=False) -> dict | None:
    """One CAdES signature of the PDF; a failure is recorded and None returned, else the signer's row."""
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko_certvalidator import ValidationContext

    from runtime.keys import subject_person

    vc = ValidationContext(trust_roots=anchors, other_certs=others, allow_fetching=False, moment=now)
    ts_vc = ValidationContext(trust_roots=anchors, other_certs=others, allow_fetching=False, moment=now)
    status = validate_pdf_signature(sig, vc, ts_validation_context=ts_vc)
    problems = []
    if not status.intact:
        problems.append("not intact (the signed bytes changed)")
    if not status.valid:
        problems.append("cryptographically invalid")
    cov, more = _coverage_problems(sig, status, later_sig)
    problems += more
    tst = status.timestamp_validity
    level = "PAdES B-B" if tst is None else "PAdES B-T"
    claimed = _utc(sig.self_reported_timestamp)
    signed_at, source, tsa = claimed, "signer's clock", None
    if tst is not None:
        if not (tst.intact and tst.valid and tst.trusted):
            problems.append("its signature timestamp is not valid or its time-stamping authority is not trusted "
                            "(give its root certificate with --cert)")
        signed_at, source, tsa = _utc(tst.timestamp), "trusted timestamp", subject_person(tst.signing_cert)["name"]
    if status.intact and status.valid and tst is not None and has_dss and not problems:
        verdict, why = _long_term(sig, anchors, others, now)
        if verdict:
            level = "PAdES B-LTA" if later_doc_ts else "PAdES B-LT"
        else:
            problems.append(f"long-term validation (ETSI EN 319 102-1, pyHanko AdES) fails: {why}")
    elif status.intact and status.valid and not status.trusted:
        problems.append(_untrusted_reason(status, level, now))
    certs = _signature_certs(sig, status, anchors)
    revocation = ""
    if level == "PAdES B-B":
        problems += [f"{p} ({TIME_CLAIMED})" for p in K.validity_problems(certs, claimed or now)]
        problems += [f"{p} (now: without a trusted timestamp (PAdES B-B) the certificate must still be valid when "
                     "the signature is verified)" for p in K.validity_problems(certs, now)]
        if status.intact and status.valid and status.trusted:  # asked online now (issue 27 §2)
            from runtime.revocation import verify_signer

            revoked, revocation = verify_signer([status.signing_cert, *_path_certs(status)], anchors, moment=now)
            problems += [revoked] if revoked else []
    elif level == "PAdES B-T":
        problems += [f"{p} (the trusted timestamp's time)" for p in K.validity_problems(certs, signed_at)]
    problems = list(dict.fromkeys(problems))
    if problems:
        report.fail(name, f"signature {sig.field_name!r}: " + "; ".join(problems))
        return None
    person = subject_person(status.signing_cert)
    from runtime.sign import reason_keyid

    reason = sig.sig_object.get("/Reason")
    row = {"field": sig.field_name, **person, "signed_at": _when(signed_at), "time_source": source, "tsa": tsa,
           "level": level, "coverage": cov, "manifest_key": reason_keyid(str(reason) if reason is not None else None),
           "end": sig.byte_range[-2] + sig.byte_range[-1] if sig.byte_range else None,
           "chain": _path_ders(status)}
    when = f"{_when(signed_at)} ({source}" + (f" by {tsa})" if tsa else ")")
    report.notes.append(f"PDF signature ({name}): intact, valid, trusted, {level} (field {sig.field_name}); signer "
                        f"{K.describe_person(person)}, signed {when}" + (f"; {revocation}" if revocation else ""))
    return row


def ess_problem(sig) -> str | None:
    """The CMS signed attribute ``signingCertificateV2`` (RFC 5035, ESS; required by PAdES, ETSI EN 319 142-1
    §5.2.2) must be present and hash the signer's embedded certificate: the signature then binds that
    certificate, so an embedded certificate altered after signing (another name, role or key usage on the
    same key) fails even in lone-PDF mode, where the embedded certificate is its own trust root (issue 27 §5).
    Returns the problem, or None."""
    from pyhanko.sign.general import check_ess_certid
    from pyhanko.sign.validation.generic_cms import get_signing_cert_attr

    from runtime.revocation import serial_hex

    try:
        attr = get_signing_cert_attr(sig.signer_info["signed_attrs"])
        sid = sig.signer_info["sid"]
        certs = [c.chosen for c in sig.signed_data["certificates"] or []]
        matching = [c for c in certs if sid.name == "issuer_and_serial_number"
                    and c.issuer == sid.chosen["issuer"] and c.serial_number == sid.chosen["serial_number"].native]
    except Exception as err:  # noqa: BLE001 - SignatureValidationError (two attributes), a damaged attribute
        return f"its signing-certificate attribute cannot be read ({type(err).__name__}: {err})"
    if attr is None:
        return "it has no signing-certificate attribute (ESS, RFC 5035): the embedded certificate is not bound to it"
    if not matching:
        return "the certificate it names (issuer and serial number) is not embedded in it"
    cert = matching[0]
    if not check_ess_certid(cert, attr["certs"][0]):
        from cryptography import x509

        c = x509.load_der_x509_certificate(cert.dump())
        return (f"the embedded certificate {K.subject_name(c)!r} (serial {serial_hex(c)}) is not the one it was "
                "signed with (its hash differs from the signed ESS signing-certificate attribute): altered after signing")
    return None


def _path_certs(status) -> list:
    """The asn1crypto certificates of the signer's validation path, leaf excluded, root included."""
    path = getattr(status, "validation_path", None)
    if path is None:
        return []
    leaf = status.signing_cert.dump()
    return [c for c in path.iter_certs(include_root=True) if c.dump() != leaf]


def _path_ders(status) -> list[bytes]:
    """DER bytes of the signer's certificate and of every certificate of its validation path (anchor
    included): what :func:`judge_pins` compares with the pinned certificates."""
    ders = [status.signing_cert.dump()]
    path = getattr(status, "validation_path", None)
    if path is not None:
        ders += [c.dump() for c in path.iter_certs(include_root=True)]
    return ders


def _long_term(sig, anchors, others, now) -> tuple[bool, str]:
    """pyHanko's AdES long-term validation of one signature at ``now`` (ETSI EN 319 102-1 §5.6.3) from the
    document's own validation data (no network), every certificate of the chain with revocation
    information: (passed, reason when not).

    Each certificate is judged by the revocation data about it only (issue 27 §3), so adding a
    countersignature never changes whether an earlier signature validates. The document security store
    holds the OCSP responses of every signer, and pyhanko-certvalidator (0.33) reads an embedded response
    whose CertID names another certificate of the same issuer (RFC 6960 §4.1.1: issuer name and key hashes,
    serial number) as a failed check, not as a response about another certificate. Once a countersignature
    has added its signer's response, the current-time step (§5.3, with the X.509 validation of §5.2.6) then
    ends in CERTIFICATE_CHAIN_GENERAL_FAILURE instead of INDETERMINATE/TRY_LATER (revocation data not fresh,
    §5.2.5) as soon as the signer's own response is past its nextUpdate (ten minutes with the test PKI,
    days with a real CA), and the past signature validation (§5.6.2.4: the time slide of §5.6.2.1 at the
    signature's proof of existence, which the document timestamps give) that proves the status at signing
    time is never reached. :func:`_own_revocation_data` gives pyHanko, per certificate, only the responses
    whose CertID names it. Neither alternative was taken: validating at the signature timestamp's time
    would check the document timestamps (the evidence record, §5.6.3) at a time before they existed, and a
    looser freshness rule (``FreshnessReqType.TIME_AFTER_SIGNATURE``, ``retroactive_revinfo``) would change
    which revocation data count as fresh for every certificate, the time-stamping authorities' included,
    and only hide the misread response behind a passing one.
    """
    import asyncio

    from pyhanko.sign.validation.ades import ades_lta_validation
    from pyhanko.sign.validation.policy_decl import (LocalKnowledge, PdfSignatureValidationSpec,
                                                     RevinfoOnlineFetchingRule, RevocationInfoGatheringSpec,
                                                     SignatureValidationSpec)
    from pyhanko_certvalidator.context import CertValidationPolicySpec
    from pyhanko_certvalidator.ltv.types import ValidationTimingInfo
    from pyhanko_certvalidator.policy_decl import REQUIRE_REVINFO, CertRevTrustPolicy
    from pyhanko_certvalidator.registry import SimpleTrustManager

    policy = CertValidationPolicySpec(trust_manager=SimpleTrustManager.build(trust_roots=anchors),
                                      revinfo_policy=CertRevTrustPolicy(REQUIRE_REVINFO))
    spec = PdfSignatureValidationSpec(SignatureValidationSpec(
        cert_validation_policy=policy, local_knowledge=LocalKnowledge(known_certs=others),
        revinfo_gathering_policy=RevocationInfoGatheringSpec(online_fetching_rule=RevinfoOnlineFetchingRule.LOCAL_ONLY)))
    timing = ValidationTimingInfo(validation_time=now, best_signature_time=now, point_in_time_validation=False)
    with _own_revocation_data():
        result = asyncio.run(ades_lta_validation(sig, spec, timing_info=timing))
    indic = getattr(result.ades_subindic, "name", str(result.ades_subindic))
    if indic == "OK":
        return True, ""
    api = result.api_status
    detail = api.revocation_details if api is not None and api.revocation_details else None
    hint = {"NO_POE": "no proof that the embedded validation data existed before the certificates expired",
            "REVOKED": "a certificate of the chain is revoked",
            "REVOKED_NO_POE": "a certificate of the chain is revoked",
            "OUT_OF_BOUNDS_NO_POE": "a certificate had expired or was revoked, with no proof of the signing time"}
    return False, f"{indic}" + (f" ({hint[indic]})" if indic in hint else "") + (f"; {detail}" if detail else "")


@contextlib.contextmanager
def _own_revocation_data():
    """While active, pyHanko's revocation manager gives each certificate only the embedded OCSP responses
    about it: those whose CertID has its serial number and its issuer's key hash (see :func:`_long_term`).
    A response it cannot read, or one for an attribute certificate, is left to pyHanko. pyHanko has no
    option for this (``ades_lta_validation`` reads the document security store itself), so the selection
    wraps ``RevinfoManager.async_retrieve_ocsps`` and restores it on exit (``audit verify`` validates one
    signature at a time, in one thread)."""
    from asn1crypto import x509
    from pyhanko_certvalidator.revinfo.manager import RevinfoManager

    original = RevinfoManager.async_retrieve_ocsps

    def about(cert, authority, response) -> bool:
        single = response.extract_single_response()
        if single is None or not isinstance(cert, x509.Certificate):
            return True
        cert_id = single["cert_id"]
        key_hash = getattr(authority.public_key, cert_id["hash_algorithm"]["algorithm"].native, None)
        return key_hash is None or (cert_id["serial_number"].native == cert.serial_number
                                    and cert_id["issuer_key_hash"].native == key_hash)

    async def retrieve(self, cert, authority):
        return [r for r in await original(self, cert, authority) if about(cert, authority, r)]

    RevinfoManager.async_retrieve_ocsps = retrieve
    try:
        yield
    finally:
        RevinfoManager.async_retrieve_ocsps = original


def _untrusted_reason(status, level: str, now: dt.datetime) -> str:
    """Why pyHanko did not trust the signer: revoked, expired, or no path to a trusted certificate."""
    rev = status.revocation_details
    if rev is not None:
        return (f"the signer's certificate was revoked on {_when(_utc(rev.revocation_date))} "
                f"({getattr(rev.revocation_reason, 'native', rev.revocation_reason)})")
    indic = getattr(status.trust_problem_indic, "name", str(status.trust_problem_indic))
    if indic in ("OUT_OF_BOUNDS_NO_POE", "EXPIRED"):
        return (f"a certificate of the chain is not valid at {_when(now)} and the signature has no trusted "
                f"timestamp with validation data ({level})")
    return f"signer certificate not trusted ({indic}; give the signer's root certificate with --cert)"


def _signature_certs(sig, status, roots: list) -> list:
    """The signer's certificate, those embedded with it, and the trust roots it was checked against, as
    ``cryptography`` certificates without duplicates (pyHanko does not check a trust root's dates, and a
    self-signed signer is its own root)."""
    from cryptography import x509

    seen, certs = set(), []
    for c in [status.signing_cert, *(getattr(sig, "other_embedded_certs", None) or []), *roots]:
        der = c.dump()
        if der not in seen:
            seen.add(der)
            certs.append(x509.load_der_x509_certificate(der))
    return certs


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
    from runtime.trusted_time import check_token

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


def check_lock(run_dir: Path, manifest: dict[str, Any], trust: Trust, report: Report, now=None) -> None:
    """The signed pre-registration (runtime/locksign.py): ``lock.json`` is the lock the manifest records,
    ``lock.sig.json`` signs its bytes, and the lock's trusted time precedes the seal's."""
    from runtime.locksign import RUN_LOCK, RUN_LOCK_SIG, check_lock_signature

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
    lock does not descend from (:func:`runtime.locksign.earlier_locks`). Each is a FAIL unless the run's
    lock (``lock.json``) lists it in its amendment chain."""
    from runtime.locksign import RUN_LOCK, lock_lineage

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


def check_countersignatures(report: Report) -> None:
    """Tie the PDF's signatures to the envelope's: the sealing signature lies within the sealed bytes;
    every later PDF signature is a countersignature whose signed /Reason names a manifest key that
    countersigned ``manifest.dsse.json``, and every such key has one."""
    sealed = report.sealed_pdf_bytes
    named = set()
    for row in report.signers:
        if row["field"] == SIGNATURE_FIELD:
            if sealed is not None and row.get("end") is not None and row["end"] > sealed:
                report.fail("report.pdf", f"signature {SIGNATURE_FIELD!r} lies after the sealed bytes")
            continue
        key = row.get("manifest_key")
        if key not in report.dsse_countersigners:
            report.fail("report.pdf", f"signature {row['field']!r} by {K.describe_person(row)} names no countersignature "
                                      f"of {ENVELOPE} (its manifest key: {key or 'none'})")
            continue
        named.add(key)
        row["countersignature"] = True
    for key in report.dsse_countersigners:
        if key not in named:
            report.fail(ENVELOPE, f"the countersignature by key {key[:16]}... has no valid PDF countersignature "
                                  "vouching for it in report.pdf")


def pdf_metadata(keywords: str) -> dict[str, str]:
    """``spec-sha256:<hex>, seed:<n>, ...`` from the PDF's Keywords entry."""
    out = {}
    for part in keywords.split(","):
        if ":" in part:
            k, v = part.strip().split(":", 1)
            out[k] = v
    return out


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


def check_roles(report: Report, roles: list[str], name: str) -> None:
    """``--require-role``: each role must be the role (certificate ``title``, else organisational unit) of
    a signer whose signature verified and whose certificate chains to a pin; compared without case."""
    listed = "; ".join(f"{K.describe_person(r)}" for r in report.signers) or "none valid"
    for role in roles:
        rows = [r for r in report.signers if (r.get("role") or "").casefold() == role.casefold()]
        if not rows:
            report.fail(name, f"no valid signature by a signer with the role {role!r} (signers: {listed})")
        elif not any(r.get("pinned") for r in rows):
            who = "; ".join(f"{K.describe_person(r)}: not pinned ({r.get('pin_reason')})" for r in rows)
            report.fail(name, f"no signer with the role {role!r} chains to a pinned certificate ({who}); a role "
                              "counts only from a certificate you pinned (--cert outside the checked folder)")
        else:
            report.notes.append(f"required role {role!r}: signed by a pinned signer")


def judge_pins(report: Report, trust: Trust) -> None:
    """Mark each signer row pinned or not: pinned when its certificate or a certificate of its validation
    path is one of the pinned certificates (byte for byte)."""
    pinned = trust.pinned_ders
    for row in report.signers:
        row["pinned"] = bool(pinned & set(row.get("chain") or []))
        if row["pinned"]:
            row.pop("pin_reason", None)
        elif row.get("embedded_only"):
            row["pin_reason"] = "checked only against the certificate embedded in the PDF"
        elif not pinned:
            row["pin_reason"] = f"no certificate from outside the {trust.folder_word} was given"
        else:
            row["pin_reason"] = (f"its certificate chains to no pinned certificate, only to copies inside the "
                                 f"{trust.folder_word}, which are evidence, not pins")


def _summarise(report: Report, trust: Trust, *, run: bool) -> None:
    """Set ``report.seal_pinned`` and ``report.summary`` (what was verified against what)."""
    rows = report.signers
    sealing = next((r for r in rows if r["field"] == SIGNATURE_FIELD), rows[0] if rows and not run else None)
    pinned_rows = [r for r in rows if r.get("pinned")]
    if run:
        report.seal_pinned = trust.public_key is not None and trust.pub_pinned
        what = f"pinned key {K.key_id(trust.public_key)[:16]}..." if report.seal_pinned else ""
    else:
        report.seal_pinned = bool(sealing and sealing.get("pinned"))
        what = f"the pinned certificate of {K.describe_person(sealing)}" if report.seal_pinned else ""
    if report.seal_pinned:
        others = [K.describe_person(r) for r in pinned_rows if r is not sealing]
        report.summary = f"against {what}" + (f" (countersigners pinned: {'; '.join(others)})" if others else "")
    elif pinned_rows:
        report.summary = ("but the seal was not pinned (pinned: "
                          + "; ".join(K.describe_person(r) for r in pinned_rows) + ")")
    else:
        report.summary = "but nothing was pinned"


def check_require_pinned(report: Report, name: str) -> None:
    """``--require-pinned``: the seal must chain to a key or certificate from outside the checked folder."""
    if not report.seal_pinned:
        report.fail(name, f"not pinned ({report.summary.removeprefix('but ')}; --require-pinned): give the signer's "
                          "key or certificate from outside the checked folder (--pubkey/--cert/--key-dir)")


#: What a run folder may hold: regular files and folders; anything else is refused by name, never opened.
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def check_folder(run_dir: Path, report: Report) -> bool:
    """Every entry of the run folder (hidden ones included, symbolic links not followed) is a regular
    file or a folder: a symbolic link or a FIFO, socket or device is a failure, named, and is not opened
    (a FIFO would block the reader). Returns whether the folder is clean."""
    clean = True
    for top, dirs, files in os.walk(run_dir, followlinks=False):
        for entry in sorted(dirs + files):
            path = Path(top) / entry
            rel = path.relative_to(run_dir).as_posix()
            try:
                mode = os.lstat(path).st_mode
            except OSError as err:
                report.fail(rel, f"cannot be read ({type(err).__name__}: {err})")
                clean = False
                continue
            if stat.S_ISLNK(mode):
                report.fail(rel, f"a symbolic link (to {os.readlink(path)}); a run folder holds only regular files "
                                 "and folders")
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
                report.fail(rel, f"{kind}, not a regular file; a run folder holds only regular files and folders "
                                 "(not opened)")
            else:
                continue
            clean = False
    return clean


def verify_run(run_dir: Path, *, trust: Trust, spec: Path | None = None, now: dt.datetime | None = None,
               require_roles: list[str] | None = None, require_pinned: bool = False) -> Report:
    """Verify a run folder; see the module docstring for the checks.

    Parameters
    ----------
    now : datetime, optional
        The verification time (default: the clock): what certificates must be valid at, for a signature
        without a trusted timestamp.
    require_roles : list of str, optional
        Roles that must each have signed the PDF validly, by a pinned signer (``audit verify --require-role``).
    require_pinned : bool
        Fail unless the seal (the manifest key) is pinned (``audit verify --require-pinned``).
    """
    run_dir = Path(run_dir)
    trust = dataclasses.replace(trust, pinned_certs=list(trust.pinned_certs))  # pinning below stays here
    report = Report()
    with library_logs(report):
        if not check_folder(run_dir, report):
            report.summary = "but nothing was pinned"
            return report  # nothing in it is opened: a FIFO would block
        _verify_run(run_dir, trust, spec, now, report)
        _summarise(report, trust, run=True)
        if require_roles:
            check_roles(report, require_roles, "report.pdf")
        if require_pinned:
            check_require_pinned(report, K.MANIFEST_PUB)
    return report


def _verify_run(run_dir: Path, trust: Trust, spec: Path | None, now, report: Report) -> None:
    for file, reason in trust.problems:
        report.fail(file, reason)
    from compiler.artifacts import ArtifactError
    from runtime.pipeline.folder import run_state

    try:
        state, run = run_state(run_dir)
    except ArtifactError as err:
        state, run = "unreadable", None
        report.fail("run.json", str(err))
    if state in ("interrupted", "running", "failed"):
        where = f" (stage {run.get('stage')})" if run and run.get("stage") else ""
        spec_shown = run.get("spec_file", "SPEC") if run else "SPEC"
        if state == "running":
            report.fail("run.json", f"the run is still running{where}: not sealed yet")
        else:
            report.fail("run.json", f"the run is {state}{where}, not sealed; complete it with "
                                    f"`audit execute {spec_shown} --resume {run_dir}`")
    stmt = check_envelope(run_dir, trust, report)
    if stmt is not None:
        report.manifest = stmt.get("predicate")
        check_artifacts(run_dir, stmt, report)
        check_run_id(run_dir, report.manifest, run, report)
        check_timestamps(run_dir, stmt, trust, report, now)
        if trust.public_key is not None and (run_dir / K.MANIFEST_PUB).is_file():
            try:
                same = K.key_id(K.load_public_key(run_dir / K.MANIFEST_PUB)) == K.key_id(trust.public_key)
            except K.KeyMaterialError:
                same = False
            if not same:
                report.fail(K.MANIFEST_PUB, "is not the public key the envelope verifies with")
    facts = check_pdf(run_dir / "report.pdf", trust, report, now=now) if (run_dir / "report.pdf").is_file() else None
    if stmt is not None and facts is not None:
        check_countersignatures(report)
    if stmt is not None:
        check_lock(run_dir, report.manifest or {}, trust, report, now)
    if run is not None:
        check_lock_recreated(run_dir, run, report)
    failed = {f.file for f in report.failures}
    # pin transitively: the pinned manifest key signs signer.crt's hash, so its first certificate (the
    # sealing signer's; not the chain's root, which would pin every other signer of that CA) is pinned;
    # a pinned certificate signs the PDF, whose metadata names the manifest key
    judge_pins(report, trust)
    sealing = next((r for r in report.signers if r["field"] == SIGNATURE_FIELD), None)
    if (trust.pub_pinned and trust.public_key is not None and stmt is not None and sealing is not None
            and not sealing["pinned"] and not failed & {K.SIGNER_CRT, ENVELOPE}
            and K.SIGNER_CRT in {s["name"] for s in stmt.get("subject", [])} and _regular(run_dir / K.SIGNER_CRT)):
        try:
            leaf = K.load_certs(run_dir / K.SIGNER_CRT)[:1]
        except K.KeyMaterialError:
            leaf = []
        trust.pinned_certs += leaf
        judge_pins(report, trust)
        if sealing["pinned"]:
            report.notes.append(f"{K.SIGNER_CRT}: authenticated by the pinned manifest signature")
    named = pdf_metadata((facts or {}).get("keywords", "")).get("manifest-ed25519")
    if facts and facts.get("field") and trust.public_key is not None and named:
        if named != K.key_id(trust.public_key):
            report.fail(K.MANIFEST_PUB, f"the signed report.pdf names manifest key {named[:16]}..., "
                                        f"not {K.key_id(trust.public_key)[:16]}...")
        elif not trust.pub_pinned and sealing is not None and sealing["pinned"]:
            trust.pub_pinned = True
            report.notes.append(f"{K.MANIFEST_PUB}: the key named in the signed report.pdf")
    report.unpinned = [n for n, ok in ((K.MANIFEST_PUB, trust.pub_pinned),
                                       (K.SIGNER_CRT, sealing is None or sealing["pinned"])) if not ok]
    if spec is not None:
        m = report.manifest or {}
        check_spec(spec, ((m.get("lock") or {}).get("spec_digest") or {}).get("digest"), report,
                   m.get("resolved_spec"))
        check_spec_lock(spec, m, report)


def check_spec_lock(spec: Path, manifest: dict[str, Any], report: Report) -> None:
    """With ``--spec``: the lock beside the spec is the run's lock or an amendment of it. A lock created
    afresh after the run (deleted and compiled again) has lost the amendment history the run belongs
    to, and fails."""
    from compiler.lock import lock_path
    from runtime.locksign import lock_lineage

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


def verify_pdf(pdf: Path, *, trust: Trust, spec: Path | None = None, now: dt.datetime | None = None,
               require_roles: list[str] | None = None, require_pinned: bool = False) -> Report:
    """Verify a lone report.pdf: its signatures, and optionally that ``spec`` matches its lock digest.
    Certificates inside the PDF's own folder are evidence, not pins (see :func:`resolve_trust`)."""
    trust = dataclasses.replace(trust, pinned_certs=list(trust.pinned_certs))
    report = Report()
    try:
        regular = stat.S_ISREG(os.stat(pdf).st_mode)
    except OSError as err:
        report.fail(str(pdf), f"cannot be read ({type(err).__name__}: {err})")
        return report
    if not regular:  # a FIFO would block the reader
        report.fail(str(pdf), "not a regular file (not opened)")
        return report
    with library_logs(report):
        facts = check_pdf(pdf, trust, report, name=str(pdf), now=now)
        judge_pins(report, trust)
        _summarise(report, trust, run=False)
        if require_roles:
            check_roles(report, require_roles, str(pdf))
        if require_pinned:
            check_require_pinned(report, str(pdf))
    sealing = report.signers[0] if report.signers else None
    report.unpinned = [] if report.seal_pinned else [
        "the certificate embedded in the PDF" if sealing is None or sealing.get("embedded_only")
        else f"certificates inside the {trust.folder_word}"]
    meta = pdf_metadata((facts or {}).get("keywords", ""))
    if meta:
        report.notes.append(f"PDF metadata: spec sha256 {meta.get('spec-sha256', '?')}, seed {meta.get('seed', '?')}")
    if spec is not None:
        check_spec(spec, meta.get("spec-sha256"), report, None)
    return report
