"""``audit verify``: check a run folder (or a lone report.pdf) against its signatures.

For a run folder: the DSSE envelope's Ed25519 signature; that ``manifest.json`` and the envelope are
byte for byte what audit-compiler writes for the signed Statement; every artifact's sha256; that no
file was added; the PDF's PAdES signature (pyHanko: intact, valid, trusted, covering the whole file);
optionally that a given spec still resolves to the run's locked digest. Every failure is reported
as ``file: reason``; nothing stops at the first one.

Trust: the public key and certificate come from ``--pubkey``/``--cert``, else the key directory,
else (reported as *not pinned*) the copies inside the run folder, which prove only that nothing
changed since signing, not who signed.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.hashing import canonical_json, file_digest
from runtime import keys as K
from runtime.sign import (ENVELOPE, MANIFEST, PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE, artifact_paths, pae, render_json)


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

    @property
    def ok(self) -> bool:
        return not self.failures

    def fail(self, file: str, reason: str) -> None:
        self.failures.append(Failure(file, reason))


@dataclass
class Trust:
    """The public key (Ed25519) and trust-root certificates a verification uses, and where they came from."""

    public_key: Any = None
    certs: list = field(default_factory=list)
    source: str = ""
    pub_pinned: bool = True
    cert_pinned: bool = True
    problems: list = field(default_factory=list)  # (file, reason) for unreadable key material in the run folder


def resolve_trust(*, pubkey: Path | None, cert: Path | None, key_dir: Path | None,
                  run_dir: Path | None) -> Trust:
    """Pick the key and certificates: explicit files, else the key directory, else the run folder's copies."""
    t = Trust()
    kd = Path(key_dir) if key_dir else K.default_key_dir()
    sources = []
    if pubkey is not None:
        t.public_key = K.load_public_key(pubkey)
        sources.append(str(pubkey))
    elif (kd / K.MANIFEST_PUB).is_file():
        t.public_key = K.load_public_key(kd / K.MANIFEST_PUB)
        sources.append(str(kd / K.MANIFEST_PUB))
    if cert is not None:
        t.certs = K.load_certs(cert)
        sources.append(str(cert))
    elif (kd / K.SIGNER_CRT).is_file():
        t.certs = K.load_certs(kd / K.SIGNER_CRT)
        sources.append(str(kd / K.SIGNER_CRT))
    if run_dir is not None:
        if t.public_key is None and (run_dir / K.MANIFEST_PUB).is_file():
            try:
                t.public_key = K.load_public_key(run_dir / K.MANIFEST_PUB)
            except K.KeyMaterialError as err:
                t.problems.append((K.MANIFEST_PUB, f"unreadable ({err})"))
            t.pub_pinned = False
            sources.append(f"{K.MANIFEST_PUB} inside the run folder")
        if not t.certs and (run_dir / K.SIGNER_CRT).is_file():
            try:
                t.certs = K.load_certs(run_dir / K.SIGNER_CRT)
            except K.KeyMaterialError as err:
                t.problems.append((K.SIGNER_CRT, f"unreadable ({err})"))
            t.cert_pinned = False
            sources.append(f"{K.SIGNER_CRT} inside the run folder")
    t.source = ", ".join(sources)
    return t


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
    good = 0
    for i, s in enumerate(sigs):
        try:
            trust.public_key.verify(_b64(s["sig"]), pae(str(payload_type), payload))
        except (InvalidSignature, ValueError, binascii.Error):
            which = "the signature" if len(sigs) == 1 else f"signature {i + 1} of {len(sigs)} (every one must verify)"
            report.fail(ENVELOPE, f"{which} does not verify with the Ed25519 key {keyid[:16]}... ({trust.source})")
            continue
        if s["keyid"] != keyid:
            report.fail(ENVELOPE, f"keyid {s['keyid']!r} does not name the key that signed it ({keyid[:16]}...)")
            continue
        good += 1
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


def statement_problems(stmt: dict[str, Any]) -> str:
    """Why the signed Statement's subjects or manifest cannot be read ('' when they can)."""
    subjects = stmt.get("subject")
    if not isinstance(subjects, list) or not all(
            isinstance(x, dict) and isinstance(x.get("name"), str) and isinstance(x.get("digest"), dict)
            and isinstance(x["digest"].get("sha256"), str) for x in subjects):
        return "subject must be a list of {name, digest: {sha256}}"
    pred = stmt.get("predicate")
    if not isinstance(pred, dict) or not isinstance(pred.get("artifacts", []), list) or not all(
            isinstance(a, dict) and isinstance(a.get("path"), str) and isinstance(a.get("sha256"), str)
            for a in pred.get("artifacts", [])):
        return "predicate must be the manifest, with artifacts as a list of {path, sha256}"
    return ""


# -------------------------------------------------------------------------------------- run folder

def check_artifacts(run_dir: Path, stmt: dict[str, Any], report: Report) -> None:
    """Each signed subject exists with its sha256; no unsigned file was added; manifest.json matches."""
    manifest = stmt.get("predicate") or {}
    mpath = run_dir / MANIFEST
    if not mpath.is_file():
        report.fail(MANIFEST, "missing")
    elif mpath.read_bytes() != render_json(manifest):
        report.fail(MANIFEST, f"differs from the manifest signed in {ENVELOPE} (edited after signing)")
    subjects = {s["name"]: s["digest"]["sha256"] for s in stmt.get("subject", [])}
    listed = {a["path"]: a["sha256"] for a in manifest.get("artifacts", [])}
    if listed != subjects:
        report.fail(ENVELOPE, "the Statement's subjects and the manifest's artifacts disagree")
    for name, want in sorted(subjects.items()):
        path = run_dir / name
        if not path.is_file():
            report.fail(name, "missing (listed in the signed manifest)")
            continue
        got = file_digest(path)["digest"]
        if got != want:
            report.fail(name, f"sha256 {got[:16]}... differs from the signed {want[:16]}... (modified after signing)")
    for name in artifact_paths(run_dir):
        if name not in subjects:
            report.fail(name, "not in the signed manifest (added after signing)")
    report.notes.append(f"artifacts: {len(subjects)} files checked (sha256) against the signed manifest")


def check_run_id(run_dir: Path, manifest: dict[str, Any], run: dict[str, Any] | None, report: Report) -> None:
    """The signed run id is the one ``run.json`` records; a folder renamed after signing still
    verifies, and the note says which run it is."""
    signed = manifest.get("run_id")
    if run is not None and run.get("run_id") != signed:
        report.fail("run.json", f"run id {run.get('run_id')!r} differs from the signed run id {signed!r}")
    renamed = f" (the folder is named {run_dir.name!r})" if run_dir.name != signed else ""
    report.notes.append(f"run: audit {manifest.get('audit')!r}, signed run id {signed!r}{renamed}")


def check_pdf(pdf: Path, trust: Trust, report: Report, *, name: str | None = None) -> dict[str, Any] | None:
    """Validate the PAdES signature of ``pdf`` with pyHanko; return its facts (signer, time, metadata)."""
    name = name or pdf.name
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko_certvalidator import ValidationContext

    try:
        import io

        reader = PdfFileReader(io.BytesIO(pdf.read_bytes()), strict=False)
        sigs = reader.embedded_signatures
    except Exception as err:  # noqa: BLE001 - a damaged PDF raises many kinds (PdfReadError, zlib.error, ...)
        report.fail(name, f"not a readable PDF ({type(err).__name__}: {err})")
        return None
    if not sigs:
        report.fail(name, "has no signature")
        return None
    from asn1crypto import x509 as a_x509
    from cryptography.hazmat.primitives import serialization

    roots = [a_x509.Certificate.load(c.public_bytes(serialization.Encoding.DER)) for c in trust.certs]
    if not roots:
        trust.cert_pinned = False  # only the PDF's own embedded certificate is left to check against
    facts: dict[str, Any] = {}
    for sig in sigs:
        try:
            use = roots or [sig.signer_cert]
            vc = ValidationContext(trust_roots=use, allow_fetching=False)
            status = validate_pdf_signature(sig, vc)
        except Exception as err:  # noqa: BLE001 - pyHanko raises many kinds on a damaged file; each is a failure
            report.fail(name, f"signature {sig.field_name!r} cannot be validated ({type(err).__name__}: {err})")
            continue
        cov = getattr(status.coverage, "name", str(status.coverage))
        problems = []
        if not status.intact:
            problems.append("not intact (the signed bytes changed)")
        if not status.valid:
            problems.append("cryptographically invalid")
        if status.intact and status.valid and not status.trusted:
            problems.append(f"signer certificate not trusted ({trust.source or 'no certificate given'})")
        if cov != "ENTIRE_FILE":
            problems.append(f"covers {cov}, not the entire file (bytes were appended after signing)")
        problems += _validity_at_signing(sig, status, use)
        if problems:
            report.fail(name, f"signature {sig.field_name!r}: " + "; ".join(problems))
            continue
        facts = {"field": sig.field_name, "signer": status.signing_cert.subject.human_friendly,
                 "signed_at": str(sig.self_reported_timestamp), "coverage": cov}
    try:
        info = reader.trailer["/Info"] if "/Info" in reader.trailer else {}
        facts["keywords"] = str(info.get("/Keywords", "")) if info else ""
    except Exception as err:  # noqa: BLE001 - a damaged document information dictionary
        report.fail(name, f"its document information cannot be read ({type(err).__name__}: {err})")
        facts["keywords"] = ""
    if facts.get("field"):
        report.notes.append(f"PDF signature ({name}): intact, valid, trusted, covers the entire file; signer "
                            f"{facts['signer']}, signed {facts['signed_at']}")
    return facts


def _validity_at_signing(sig, status, roots: list) -> list[str]:
    """Every certificate of the signature (the signer's, those embedded with it, and the trust roots it
    was checked against) must be valid at the signing time (issue 16). Without a trusted timestamp that
    time is the signer's own claim, and the message says so. pyHanko does not check a trust root's
    dates, and a self-signed signer is its own root."""
    import datetime as dt

    from cryptography import x509

    from runtime.keys import validity_problems

    at = sig.self_reported_timestamp or dt.datetime.now(dt.timezone.utc)
    if at.tzinfo is None:
        at = at.replace(tzinfo=dt.timezone.utc)
    seen, certs = set(), []
    for c in [status.signing_cert, *(getattr(sig, "other_embedded_certs", None) or []), *roots]:
        der = c.dump()
        if der not in seen:
            seen.add(der)
            certs.append(x509.load_der_x509_certificate(der))
    label = "the signing time claimed by the signer (no trusted timestamp)"
    return [f"{p} ({label})" for p in validity_problems(certs, at)]


def pdf_metadata(keywords: str) -> dict[str, str]:
    """``spec-sha256:<hex>, seed:<n>, ...`` from the PDF's Keywords entry."""
    out = {}
    for part in keywords.split(","):
        if ":" in part:
            k, v = part.strip().split(":", 1)
            out[k] = v
    return out


def check_spec(spec: Path, locked: str | None, report: Report, resolved_locked: dict[str, Any] | None) -> None:
    """The spec file resolves to the run's locked digest (else name the changed keys)."""
    from compiler import compile_spec
    from compiler.errors import AuditError
    from compiler.hashing import digest
    from compiler.lock import diff_paths

    try:
        resolved = compile_spec(spec).resolved
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


def verify_run(run_dir: Path, *, trust: Trust, spec: Path | None = None) -> Report:
    """Verify a run folder; see the module docstring for the checks."""
    run_dir = Path(run_dir)
    trust = dataclasses.replace(trust)  # pinning decisions below must not leak into the caller's object
    report = Report()
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
        if trust.public_key is not None and (run_dir / K.MANIFEST_PUB).is_file():
            try:
                same = K.key_id(K.load_public_key(run_dir / K.MANIFEST_PUB)) == K.key_id(trust.public_key)
            except K.KeyMaterialError:
                same = False
            if not same:
                report.fail(K.MANIFEST_PUB, "is not the public key the envelope verifies with")
    facts = check_pdf(run_dir / "report.pdf", trust, report) if (run_dir / "report.pdf").is_file() else None
    failed = {f.file for f in report.failures}
    # pin transitively: the pinned manifest key signs signer.crt's hash; the pinned certificate signs
    # the PDF, whose metadata names the manifest key
    if (not trust.cert_pinned and trust.pub_pinned and stmt is not None and not failed & {K.SIGNER_CRT, ENVELOPE}
            and K.SIGNER_CRT in {s["name"] for s in stmt.get("subject", [])}):
        trust.cert_pinned = True
        report.notes.append(f"{K.SIGNER_CRT}: authenticated by the pinned manifest signature")
    named = pdf_metadata((facts or {}).get("keywords", "")).get("manifest-ed25519")
    if facts and facts.get("field") and trust.public_key is not None and named:
        if named != K.key_id(trust.public_key):
            report.fail(K.MANIFEST_PUB, f"the signed report.pdf names manifest key {named[:16]}..., "
                                        f"not {K.key_id(trust.public_key)[:16]}...")
        elif not trust.pub_pinned and trust.cert_pinned:
            trust.pub_pinned = True
            report.notes.append(f"{K.MANIFEST_PUB}: the key named in the signed report.pdf")
    report.unpinned = [n for n, ok in ((K.MANIFEST_PUB, trust.pub_pinned), (K.SIGNER_CRT, trust.cert_pinned)) if not ok]
    if spec is not None:
        m = report.manifest or {}
        check_spec(spec, ((m.get("lock") or {}).get("spec_digest") or {}).get("digest"), report,
                   m.get("resolved_spec"))
    return report


def verify_pdf(pdf: Path, *, trust: Trust, spec: Path | None = None) -> Report:
    """Verify a lone report.pdf: its PAdES signature, and optionally that ``spec`` matches its lock digest."""
    trust = dataclasses.replace(trust)
    report = Report()
    facts = check_pdf(pdf, trust, report, name=str(pdf))
    report.unpinned = [] if trust.cert_pinned else ["the certificate embedded in the PDF"]
    meta = pdf_metadata((facts or {}).get("keywords", ""))
    if meta:
        report.notes.append(f"PDF metadata: spec sha256 {meta.get('spec-sha256', '?')}, seed {meta.get('seed', '?')}")
    if spec is not None:
        check_spec(spec, meta.get("spec-sha256"), report, None)
    return report
