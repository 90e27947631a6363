"""Seal a run: sign the PDF (PAdES B-B, or B-LTA with a time-stamping authority), then write
``manifest.json``, its signed DSSE envelope and (with a TSA) the envelope's timestamps.

Order (so that every hash covers the final bytes): the report is rendered, the PDF is signed in
place, the public key and certificate are copied in, ``run.json`` is written for the last time,
then every file of the run folder is hashed into ``manifest.json`` and the in-toto Statement over
them is signed into ``manifest.dsse.json``; with a TSA, ``manifest.timestamps.json`` holds an RFC 3161
token over each envelope signature (runtime/provenance/trusted_time.py). These three are the only files the
manifest does not list.

DSSE (Dead Simple Signing Envelope, github.com/secure-systems-lab/dsse, protocol v1.0.2): the
signature covers ``PAE(payloadType, payload)``. PAE is six lines, implemented here: the maintained
Python DSSE code lives inside sigstore/securesystemslib with their dependency trees, so the encoding is
written out and tested against the specification's own test vector (tests/test_sign.py).
in-toto Statement v1 (github.com/in-toto/attestation, spec/v1/statement.md): ``_type``, ``subject``
(name, sha256 and byte length per artifact; for ``report.pdf`` its sealed revision, see :func:`statement`),
``predicateType``, ``predicate`` (the manifest).
Seed 000 §3.7: every result traces to one locked configuration and seed.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Iterable

from compiler.artifacts import MANIFEST_SCHEMA_VERSION, Manifest
from compiler.hashing import canonical_json, file_digest
from compiler.lock import lock_methods_version, utc_now

MANIFEST, ENVELOPE, TIMESTAMPS = "manifest.json", "manifest.dsse.json", "manifest.timestamps.json"
#: Countersigners' public keys and certificates (``audit sign``, runtime/provenance/countersign.py).
COUNTERSIGNATURES = "countersignatures.json"
#: Files of a run folder the manifest does not (cannot) list.
SEAL_FILES = (MANIFEST, ENVELOPE, TIMESTAMPS, COUNTERSIGNATURES)
#: PAdES baseline levels (ETSI EN 319 142-1) audit-compiler signs: without and with a TSA.
PROFILE_OFFLINE, PROFILE_TSA = "PAdES B-B", "PAdES B-LTA"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "urn:audit-compiler:manifest:v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
SIGNATURE_FIELD = "AuditSignature"
SIGNATURE_BOX_ID = "signature-box"
#: Countersignatures (``audit sign``): field names ``Countersignature1``...; the report reserves a box for
#: each of the first COUNTERSIGN_BOXES (``#countersignature-box-N``), later ones are invisible signatures.
COUNTERSIGN_FIELD, COUNTERSIGN_BOX_ID, COUNTERSIGN_BOXES = "Countersignature", "countersignature-box-{n}", 2
#: The one subject whose file may grow after sealing (incremental PDF updates by ``audit sign``): its
#: Statement subject binds the sealed revision, the first ``annotations.bytes`` bytes (issue 27 §4).
SEALED_PDF = "report.pdf"
#: Result tables whose bytes a re-run with the same spec and seed reproduces (listed in the report).
REPRODUCIBLE_RESULTS = ("metrics.csv", "metrics_by_job.csv", "headline.csv", "paired.csv", "effects.csv",
                        "sesoi.csv", "power.csv", "causal.csv", "ll144.csv",
                        # issue 38: the negative controls' tables (listed only in runs that have them)
                        "negative_controls.csv", "control_paired.csv", "noise_floor.csv")
#: The signature box of the report template, in mm (runtime/report/templates/_signature.html.j2).
SIGNATURE_BOX_MM = (100.0, 30.0)


# ----------------------------------------------------------------------------------------- DSSE

def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: ``"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body``.

    LEN is the ASCII decimal byte length, no leading zeros (DSSE protocol.md, "Signature Definition").
    """
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def dsse_sign(payload: bytes, payload_type: str, private_key, keyid: str) -> dict[str, Any]:
    """A DSSE JSON envelope with one Ed25519 signature over ``pae(payload_type, payload)``."""
    sig = private_key.sign(pae(payload_type, payload))
    return {"payloadType": payload_type, "payload": base64.b64encode(payload).decode("ascii"),
            "signatures": [{"keyid": keyid, "sig": base64.b64encode(sig).decode("ascii")}]}


# ----------------------------------------------------------------------------- countersignatures

#: The signed /Reason of a countersignature names the manifest key it vouches for (verify reads it back).
REASON_PREFIX = "countersignature; manifest key ed25519:"


def read_countersignatures(run_dir: Path) -> list[dict[str, Any]]:
    """The entries of ``countersignatures.json`` ([] when absent).

    Raises
    ------
    ValueError
        The file is not the JSON audit-compiler writes.
    """
    path = Path(run_dir) / COUNTERSIGNATURES
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    entries = data.get("countersignatures") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError("countersignatures must be a list of objects")
    return entries


def reason_keyid(reason: str | None) -> str | None:
    """The manifest key id a countersignature's signed /Reason names, or None."""
    if reason and reason.startswith(REASON_PREFIX):
        return reason[len(REASON_PREFIX):].split()[0].strip(";,")
    return None


def render_json(value: Any) -> bytes:
    """The exact bytes audit-compiler writes for a JSON file of the seal (verify compares them)."""
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# ------------------------------------------------------------------------------------ provenance

def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True,
                          timeout=30, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"}).stdout.strip()


def git_info(spec_path: Path, inputs: Iterable[str] = (), exclude: Iterable[Path] = ()) -> dict[str, Any] | None:
    """Commit and dirty flag of the git repository holding the spec; None outside git (or no git).

    ``dirty`` says whether the commit alone may not reproduce the run (issue 37 §3): a tracked file
    changed (modified, staged, deleted or renamed against HEAD), or the spec or an input it names is not
    in the commit (untracked). Other untracked files (notes, run folders, the task store) do not count,
    and neither does anything under ``exclude`` (the run's output root and task store). Ignored files
    never count.

    Parameters
    ----------
    spec_path : Path
        The spec.
    inputs : iterable of str
        The files the spec names, relative to the spec's folder (:func:`spec_inputs`).
    exclude : iterable of Path
        Folders whose files never count (the output root, the task store).

    Returns
    -------
    dict or None
        ``commit`` (hex, None before the first commit), ``dirty`` (bool), ``changed`` (the files that
        make it dirty, relative to the repository root, POSIX form, sorted; at most
        :data:`MAX_CHANGED` named), ``spec_path`` (the spec relative to the repository root, POSIX form).
    """
    folder = Path(spec_path).resolve().parent
    try:
        root = Path(_git(folder, "rev-parse", "--show-toplevel")).resolve()
        try:
            commit = _git(folder, "rev-parse", "--verify", "HEAD")
        except subprocess.CalledProcessError:
            commit = None
        status = _git_raw(root, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    except (OSError, subprocess.SubprocessError):
        return None
    try:
        rel = Path(spec_path).resolve().relative_to(root).as_posix()
    except ValueError:
        rel = Path(spec_path).name
    named = {rel}
    for ref in inputs:
        try:
            named.add((folder / ref).resolve().relative_to(root).as_posix())
        except (ValueError, OSError, RuntimeError):
            continue
    skip = []
    for path in exclude:
        try:
            skip.append(Path(path).resolve().relative_to(root).as_posix().rstrip("/") + "/")
        except (ValueError, OSError, RuntimeError):
            continue
    changed = set()
    entries = status.split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":  # a rename or copy: the next field is its source
            i += 1
        if any(path.startswith(s) for s in skip):
            continue
        if code == "??":
            if path in named:
                changed.add(path)
            continue
        changed.add(path)
    changed = sorted(changed)
    return {"commit": commit, "dirty": bool(changed), "changed": changed[:MAX_CHANGED], "spec_path": rel}


#: At most this many changed files are named in ``spec_git.changed`` (the flag counts them all).
MAX_CHANGED = 50


def _git_raw(folder: Path, *args: str) -> str:
    """``git`` output as it is (not stripped: ``-z`` output keeps its separators)."""
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True,
                          timeout=30, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"}).stdout


def spec_inputs(resolved: dict[str, Any]) -> list[str]:
    """The files a resolved spec names, relative to the spec's folder: every ``{"path", "sha256"}``
    reference that resolution hashed (score files, job descriptions, microdata, prompts, ...)."""
    out: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("path"), str) and isinstance(value.get("sha256"), str):
                out.add(value["path"])
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(resolved)
    return sorted(out)


def reproduce_commands(*, spec_shown: str, git: dict[str, Any] | None, tool_version: str,
                       allow_exec: bool = False) -> list[str]:
    """Shell lines that re-run the audit with the same spec and seed (metrics.csv byte-identical).

    With git: check out the recorded commit and run from the repository root; without: run from
    the spec's folder (``spec_shown`` is then the spec's file name). The spec's lock pins everything else.
    ``allow_exec``: the spec's systems run vendor code, so the command carries ``--allow-exec`` (issue 36 §1).
    """
    lines = [f"pip install 'audit-compiler=={tool_version}'"]
    spec = spec_shown
    if git and git.get("commit"):
        lines.append(f"git checkout {git['commit']}   # from the root of the spec's repository")
        spec = git["spec_path"]
    q = spec if all(c.isalnum() or c in "/._-" for c in spec) else "'" + spec.replace("'", "'\\''") + "'"
    lines.append(f"audit compile {q} && audit execute {'--allow-exec ' if allow_exec else ''}{q}")
    return lines


def amendment_chain(lock: dict[str, Any]) -> list[dict[str, Any]]:
    """Every amendment of the lock: time, reason, changed keys and the superseded digest."""
    out = []
    for a in lock.get("amendments") or []:
        prev = a.get("previous") or {}
        out.append({"amended_at": a.get("amended_at"), "reason": a.get("reason"), "changes": a.get("changes", []),
                    "previous_spec_digest": prev.get("spec_digest"), "previous_created_at": prev.get("created_at")})
    return out


# -------------------------------------------------------------------------------------- manifest

def artifact_paths(run_dir: Path) -> list[str]:
    """Every file under ``run_dir`` (POSIX paths, sorted), except the manifest and its envelope."""
    out = []
    for p in sorted(Path(run_dir).rglob("*")):
        rel = p.relative_to(run_dir).as_posix()
        if p.is_file() and rel not in SEAL_FILES:
            out.append(rel)
    return out


def build_manifest(run_dir: Path, *, run: dict[str, Any], lock: dict[str, Any], resolved: dict[str, Any],
                   git: dict[str, Any] | None, signing: dict[str, Any] | None) -> dict[str, Any]:
    """The manifest (the Statement's predicate): artifacts with sha256, lock, seed, versions, provenance;
    built and validated as a :class:`compiler.artifacts.Manifest` (schema 1.1)."""
    artifacts = []
    for rel in artifact_paths(run_dir):
        path = run_dir / rel
        artifacts.append({"path": rel, "sha256": file_digest(path)["digest"], "bytes": path.stat().st_size})
    methods_version = lock_methods_version(lock)
    return Manifest.model_validate({
        "schema_version": MANIFEST_SCHEMA_VERSION, "kind": "audit-manifest",
        "run_id": run["run_id"], "audit": run["audit"], "generated_at": utc_now(),
        "run_generated_at": run["generated_at"], "status": run["status"],
        "artifacts": artifacts,
        "lock": {"spec_file": run["spec_file"], "spec_digest": lock["spec_digest"],
                 "plan_digest": lock["plan_digest"], "created_at": lock["created_at"],
                 "amendments": amendment_chain(lock), "methods_version": methods_version},
        "seed": run["seed"], "tool": run["tool"], "versions": run["versions"], "models": run["models"],
        "spec_git": git, "reproduce": run.get("reproduce"),
        "signing": signing, "resolved_spec": resolved, "methods_version": methods_version,
    }).dump()


def statement(manifest: dict[str, Any]) -> dict[str, Any]:
    """The in-toto Statement v1 whose subjects are the manifest's artifacts (issue 27 §4).

    Each subject is an in-toto ResourceDescriptor (github.com/in-toto/attestation, spec/v1/
    resource_descriptor.md): ``name`` (the file's POSIX path in the run folder), ``digest.sha256`` and
    ``annotations.bytes``, the length in bytes of the content the digest covers. The subject of
    :data:`SEALED_PDF` also says ``annotations.sealedRevision: true``: its digest covers the first
    ``bytes`` bytes of the file, the PDF revision as sealed; the file may be longer, because ``audit
    sign`` appends incremental updates (ISO 32000-1:2008 §7.5.6: countersignatures and validation
    data, covered by the PDF's own signatures). Every other file must be exactly ``bytes`` long. The
    rule is written in reports/README.md; scripts/verify_dsse.py checks it with securesystemslib and
    hashlib only. Statements written before issue 27 have no ``annotations``; ``audit verify`` then
    takes the sealed length of ``report.pdf`` from the predicate's ``artifacts[].bytes``.
    """
    subjects = []
    for a in manifest["artifacts"]:
        annotations: dict[str, Any] = {"bytes": a["bytes"]}
        if a["path"] == SEALED_PDF:
            annotations["sealedRevision"] = True
        subjects.append({"name": a["path"], "digest": {"sha256": a["sha256"]}, "annotations": annotations})
    return {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": PREDICATE_TYPE, "predicate": manifest}


def write_seal(run_dir: Path, manifest: dict[str, Any], keys, tsa: str | None = None) -> list[str]:
    """Write ``manifest.json`` and, with keys, ``manifest.dsse.json`` (and with ``tsa`` the envelope's
    timestamps, ``manifest.timestamps.json``); return the names written.

    ``manifest.json`` is the predicate as it reads back from the signed canonical payload (keys sorted,
    RFC 8785 numbers), so that verify can require it byte for byte.
    """
    from runtime.store import atomic_write

    written = []
    if keys is not None:  # the envelope first: manifest.json, written last, marks a sealed run
        payload = canonical_json(statement(manifest))
        envelope = dsse_sign(payload, PAYLOAD_TYPE, keys.manifest_key, keys.keyid)
        if tsa:
            from runtime.provenance.trusted_time import timestamp_envelope

            atomic_write(run_dir / TIMESTAMPS, render_json(timestamp_envelope(envelope, tsa)))
            written.append(TIMESTAMPS)
        atomic_write(run_dir / ENVELOPE, render_json(envelope))
        written.append(ENVELOPE)
    atomic_write(run_dir / MANIFEST, render_json(json.loads(canonical_json(manifest))))
    return [MANIFEST, *written]


def signing_record(keys, tsa: str | None = None) -> dict[str, Any] | None:
    """What the manifest says about the keys (public facts only): the responsible person the certificate
    names (name, role, organisation), the PAdES level, and the time-stamping authority (None: offline,
    B-B). ``manifest.timestamps`` names the file a verifier must find when the envelope was timestamped."""
    if keys is None:
        return None
    from runtime.provenance.keys import MANIFEST_PUB, SIGNER_CRT, cert_fingerprint

    return {"manifest": {"algorithm": "ed25519", "keyid": keys.keyid, "public_key_file": MANIFEST_PUB,
                         "envelope": ENVELOPE, "payload_type": PAYLOAD_TYPE,
                         "timestamps": TIMESTAMPS if tsa else None},
            "pdf": {"profile": PROFILE_TSA if tsa else PROFILE_OFFLINE, "signer": keys.signer_name(),
                    "certificate_sha256": cert_fingerprint(keys.pdf_cert), "certificate_file": SIGNER_CRT,
                    "field": SIGNATURE_FIELD},
            "signer": keys.signer(), "tsa": tsa,
            # the signer chain's revocation status when the run was signed (issue 27 §2)
            "revocation": keys.revocation.record() if getattr(keys, "revocation", None) is not None else None}


# ------------------------------------------------------------------------------------------- PDF

def _name_tree_lookup(node, name: str):
    """Value of ``name`` in a PDF name tree (ISO 32000-1 §7.9.6), or None."""
    node = node.get_object()
    if "/Names" in node:
        arr = node["/Names"]
        for i in range(0, len(arr), 2):
            if str(arr[i]) == name:
                return arr[i + 1].get_object()
    for kid in node.get("/Kids", []):
        kid = kid.get_object()
        lo, hi = (str(x) for x in kid["/Limits"]) if "/Limits" in kid else (None, None)
        if lo is not None and not (lo <= name <= hi):
            continue
        found = _name_tree_lookup(kid, name)
        if found is not None:
            return found
    return None


def _page_refs(ref):
    """Indirect references of every page, in order (walks the page tree's /Kids)."""
    node = ref.get_object()
    if node.get("/Type") == "/Page":
        yield ref
        return
    kids = node["/Kids"]
    for i in range(len(kids)):
        yield from _page_refs(kids.raw_get(i))


def signature_box(reader, box_id: str = SIGNATURE_BOX_ID) -> tuple[int, tuple[float, float, float, float]] | None:
    """Page index and rectangle (PDF points) of the element ``id=box_id``, from WeasyPrint's named
    destination (its top-left corner) and the box's fixed size; None when the report has no box."""
    root = reader.root
    tree = root.get("/Names", {}).get("/Dests") if "/Names" in root else None
    dest = _name_tree_lookup(tree, box_id) if tree is not None else None
    if dest is None and "/Dests" in root:
        dest = root["/Dests"].get_object().get("/" + box_id)
    if dest is None:
        return None
    if hasattr(dest, "keys") and "/D" in dest:
        dest = dest["/D"]
    page_ref, x, y = dest.raw_get(0), float(dest[2]), float(dest[3])
    pages = [ref.idnum for ref in _page_refs(root.raw_get("/Pages"))]
    page = pages.index(page_ref.idnum)
    w, h = (v * 72 / 25.4 for v in SIGNATURE_BOX_MM)
    return page, (x, y - h, x + w, y)


def sign_pdf(path: Path, keys, *, reason: str, location: str | None = None,
             extra_lines: list[str] | None = None, tsa: str | None = None, field: str = SIGNATURE_FIELD,
             box_id: str = SIGNATURE_BOX_ID, heading: str = "Digitally signed") -> dict[str, Any]:
    """Sign ``path`` in place with pyHanko, with a visible box showing signer, role and time.

    Without ``tsa`` the signature is PAdES B-B: its time is the signer's clock. With the URL of an
    RFC 3161 time-stamping authority it is PAdES B-LTA (ETSI EN 319 142-1): a signature timestamp,
    the chain's certificates, CRLs and OCSP responses (fetched now) in the document security store,
    and a document timestamp over them, so that it validates after the certificate expires.

    The box is drawn over the report's ``#signature-box`` element (last page); without one, it goes
    in the bottom-left corner of the last page. A countersignature (``field`` ``Countersignature<N>``)
    goes over ``#countersignature-box-<N>``, and is invisible when the report has no such box. The
    signature is an incremental update: earlier signatures stay valid.

    Returns
    -------
    dict
        ``page`` (0-based; None when invisible), ``box`` (PDF points), ``signer``, ``profile``, ``field``.

    Raises
    ------
    runtime.provenance.trusted_time.TrustedTimeError
        With ``tsa``: the TSA, or the validation data of the chain, cannot be obtained.
    """
    from asn1crypto import keys as a_keys, x509 as a_x509
    from cryptography.hazmat.primitives import serialization
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.pdf_utils.text import TextBoxStyle
    from pyhanko.sign import fields, signers
    from pyhanko.stamp import TextStampStyle
    from pyhanko_certvalidator.registry import SimpleCertificateStore

    der = serialization.Encoding.DER
    signing_key = a_keys.PrivateKeyInfo.load(keys.pdf_key.private_bytes(
        der, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    cert = a_x509.Certificate.load(keys.pdf_cert.public_bytes(der))
    chain = [a_x509.Certificate.load(c.public_bytes(der)) for c in keys.pdf_chain]
    signer = signers.SimpleSigner(signing_cert=cert, signing_key=signing_key,
                                  cert_registry=SimpleCertificateStore.from_certs([cert, *chain]))
    data = Path(path).read_bytes()
    writer = IncrementalPdfFileWriter(io.BytesIO(data), strict=False)
    found = signature_box(writer.prev, box_id)
    if found is None and field == SIGNATURE_FIELD:
        n = int(writer.prev.root["/Pages"]["/Count"])
        w, h = (v * 72 / 25.4 for v in SIGNATURE_BOX_MM)
        found = (n - 1, (40.0, 60.0, 40.0 + w, 60.0 + h))
    page, box = found if found is not None else (0, None)
    profile = PROFILE_TSA if tsa else PROFILE_OFFLINE
    person = keys.signer()
    text = (f"{heading} ({profile}) by\n%(signer)s"
            + ("\n%(role)s" if person["role"] or person["organisation"] else "")
            + "\nTime: %(ts)s (signer's clock)" + ("\nTrusted time: RFC 3161 timestamp embedded" if tsa else ""))
    params = {"role": ", ".join(x for x in (person["role"], person["organisation"]) if x)}
    for i, line in enumerate(extra_lines or []):
        text += f"\n%(line{i})s"
        params[f"line{i}"] = line
    style = TextStampStyle(stamp_text=text, timestamp_format="%Y-%m-%d %H:%M:%S %Z", border_width=1,
                           text_box_style=TextBoxStyle(font_size=8))
    lt: dict[str, Any] = {}
    timestamper = None
    if tsa:
        from runtime.provenance.trusted_time import signer_validation_context, timestamper as make_timestamper

        lt = {"embed_validation_info": True, "use_pades_lta": True,
              "validation_context": signer_validation_context(keys, fetch=True)}
        timestamper = make_timestamper(tsa)
    meta = signers.PdfSignatureMetadata(field_name=field, subfilter=fields.SigSeedSubFilter.PADES,
                                        md_algorithm="sha256", reason=reason, location=location,
                                        name=keys.signer_name(), **lt)
    rect = tuple(int(round(v)) for v in box) if box is not None else None
    pdf_signer = signers.PdfSigner(meta, signer=signer, stamp_style=style, timestamper=timestamper,
                                   new_field_spec=fields.SigFieldSpec(field, on_page=page, box=rect))
    out = io.BytesIO()

    async def sign() -> None:
        try:
            await pdf_signer.async_sign_pdf(writer, output=out, appearance_text_params=params)
        finally:
            if "validation_context" in lt:  # close its fetchers' aiohttp session in the loop that opened it
                await lt["validation_context"].aclose()

    try:
        asyncio.run(sign())
    except Exception as err:  # noqa: BLE001 - with a TSA: network, revocation and TSA errors
        if not tsa:
            raise
        from runtime.provenance.trusted_time import MSG_TSA_DOWN, TrustedTimeError

        cause = err.__cause__ or err
        raise TrustedTimeError(MSG_TSA_DOWN.format(url=tsa, err=f"{type(err).__name__}: {err}"
                                                   + (f" ({cause})" if cause is not err else ""))) from None
    from runtime.store import atomic_write

    atomic_write(Path(path), out.getvalue())
    return {"page": page if rect else None, "box": list(rect) if rect else None, "signer": keys.signer_name(),
            "profile": profile, "field": field}


def seal_run(folder, *, lock: dict[str, Any], resolved: dict[str, Any], keys, git: dict[str, Any] | None,
             finish, timings: dict[str, float] | None = None, tsa: str | None = None) -> dict[str, Any]:
    """Sign the PDF, copy the public key material, let ``finish()`` write run.json the last time,
    then write the manifest and its envelope (timestamped with ``tsa``). Returns the manifest."""
    from runtime.provenance.keys import copy_public
    from runtime.progress import stage_timer

    run_dir, run = folder.path, folder.run
    if keys is not None:
        with stage_timer(timings if timings is not None else {}, "sign"):
            if (run_dir / "report.pdf").exists():
                run["pdf_signature"] = sign_pdf(
                    run_dir / "report.pdf", keys,
                    reason=f"audit {run['audit']} run {run['run_id']}: report as generated",
                    extra_lines=[f"Spec sha256 {lock['spec_digest']['digest'][:16]}... seed {run['seed']}"], tsa=tsa)
            run["artifacts"] += copy_public(keys, run_dir, timestamped=bool(tsa))
    run["signed"] = keys is not None
    finish()
    manifest = build_manifest(run_dir, run=run, lock=lock, resolved=resolved, git=git,
                              signing=signing_record(keys, tsa))
    write_seal(run_dir, manifest, keys, tsa)
    return manifest


def provenance_context(run_dir: Path, run: dict[str, Any], keys, tsa: str | None = None) -> dict[str, Any]:
    """The report's ``provenance`` context: reproduction commands, expected hashes, signer (name, role,
    organisation; ``signer_self_signed`` when the certificate is its own issuer, so the name is asserted,
    not certified), the PAdES level and the time-stamping authority."""
    from runtime.provenance.keys import cert_fingerprint

    def sha(name: str) -> str | None:
        p = run_dir / name
        return file_digest(p)["digest"] if p.exists() else None

    ctx = {"commands": run.get("reproduce") or [], "git": run.get("spec_git"), "signed": keys is not None,
           "pdf": bool(run.get("report_pdf", True)),
           "metrics_sha256": sha("metrics.csv"), "paired_sha256": sha("paired.csv"),
           # the result tables a re-run reproduces byte for byte, whichever this design writes
           "results": [{"name": n, "sha256": sha(n)} for n in REPRODUCIBLE_RESULTS if sha(n)]}
    if keys is not None:
        from runtime.provenance.keys import describe_person

        from runtime.provenance.trusted_time import is_self_signed, to_asn1

        person = keys.signer()
        ctx.update(signer=describe_person(person), signer_role=person.get("role"), keyid=keys.keyid,
                   signer_name=person.get("name") if isinstance(person, dict) else None,
                   signer_self_signed=is_self_signed(to_asn1(keys.pdf_cert)),
                   cert_not_after=keys.pdf_cert.not_valid_after_utc.strftime("%Y-%m-%d"),
                   cert_sha256=cert_fingerprint(keys.pdf_cert),
                   profile=PROFILE_TSA if tsa else PROFILE_OFFLINE, tsa=tsa, countersign_boxes=COUNTERSIGN_BOXES,
                   revocation=keys.revocation.sentence() if getattr(keys, "revocation", None) is not None
                   else "revocation not checked")
    return ctx
