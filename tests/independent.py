"""Independent verifiers of a signed run (issue 16): code that is not ours checks what we sign.

- the PDF: poppler's ``pdfsig`` (NSS), with the trusted certificates in a throwaway NSS database, and
  OpenSSL's ``openssl cms -verify`` where poppler 22.12 gives its catch-all certificate line;
- the envelope: scripts/verify_dsse.py, the reference verifier shipped for people without this tool:
  securesystemslib's DSSE ``Envelope`` verifies ``manifest.dsse.json``, and the in-toto Statement's subjects
  are checked against the folder with :mod:`hashlib` (``report.pdf`` by its sealed revision, issue 27 §4).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path


def nss_db(where: Path, *certs: Path, trust: str = "C,C,C") -> str:
    """A new NSS database under ``where/nss`` trusting ``certs`` (certutil); its ``sql:`` address."""
    db = where / "nss"
    db.mkdir()
    subprocess.run(["certutil", "-N", "-d", f"sql:{db}", "--empty-password"], check=True, capture_output=True)
    for i, c in enumerate(certs):
        subprocess.run(["certutil", "-A", "-d", f"sql:{db}", "-n", f"trusted{i}", "-t", trust, "-i", str(c)],
                       check=True, capture_output=True)
    return f"sql:{db}"


def pdfsig(pdf: Path, db: str, *options: str) -> list[dict[str, str]]:
    """pdfsig's report, one dict per signature (its ``- Key: value`` lines); ``options`` go before the file
    (``-no-ocsp``: no online revocation check)."""
    out = subprocess.run(["pdfsig", "-nssdir", db, *options, str(pdf)], capture_output=True, text=True,
                         timeout=120).stdout
    sigs: list[dict[str, str]] = []
    for line in out.splitlines():
        if line.startswith("Signature #"):
            sigs.append({})
        elif line.strip().startswith("- ") and sigs:
            key, _, value = line.strip()[2:].partition(": ")
            sigs[-1][key] = value or key
    return sigs


#: poppler's certificate line for any NSS error code it does not name. Poppler up to 23.x (this machine has
#: 22.12) reads ``PORT_GetError()`` after ``CERT_PKIXVerifyCert`` without checking that call's result
#: (``SignatureHandler::validateCertificate``; later versions read it only on failure), so an error code left
#: over from an earlier NSS call of the same process turns a chain NSS verified into this line. CI of stops 44,
#: 45 and 53 met it on the third signature of a twice-countersigned report, online and with ``-no-ocsp``.
POPPLER_GENERIC_CERT_ERROR = "Unknown issue with Certificate or corrupted data."
CADES = "ETSI.CAdES.detached"


def openssl_cms_verify(pdf: Path, root_pem: Path) -> list[tuple[str, bool, str]]:
    """Each CAdES signature of ``pdf`` verified by OpenSSL (``openssl cms -verify``): the CMS over its
    /ByteRange bytes and its certificate chain (the certificates the CMS carries) up to ``root_pem`` at the
    current time. One ``(signer common name, verified, OpenSSL's message)`` per signature, in field order.
    pyHanko only reads the file (the /Contents and /ByteRange of each field); OpenSSL checks."""
    import tempfile

    from pyhanko.pdf_utils.reader import PdfFileReader

    data = pdf.read_bytes()
    reader = PdfFileReader(__import__("io").BytesIO(data), strict=False)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, sig in enumerate(reader.embedded_signatures):
            obj = sig.sig_object
            if sig.sig_object_type == "/DocTimeStamp" or obj.get("/SubFilter") != "/" + CADES:
                continue
            a, la, b, lb = (int(x) for x in obj["/ByteRange"])
            content, cms = Path(tmp) / f"{i}.bin", Path(tmp) / f"{i}.der"
            content.write_bytes(data[a:a + la] + data[b:b + lb])
            cms.write_bytes(_der_prefix(bytes(obj["/Contents"])))  # the ContentInfo, without its zero padding
            proc = subprocess.run(["openssl", "cms", "-verify", "-binary", "-inform", "DER", "-in", str(cms),
                                   "-content", str(content), "-CAfile", str(root_pem), "-purpose", "any",
                                   "-out", "/dev/null"], capture_output=True, text=True, timeout=60)
            name = sig.signer_cert.subject.native["common_name"]
            out.append((name, proc.returncode == 0, (proc.stderr or proc.stdout).strip()))
    return out


def _der_prefix(raw: bytes) -> bytes:
    """The first DER element of ``raw`` (a /Contents string: the CMS ContentInfo, then zeros up to the
    reserved size), by its tag and length octets."""
    if raw[1] < 0x80:
        return raw[:2 + raw[1]]
    n = raw[1] & 0x7F
    return raw[:2 + n + int.from_bytes(raw[2:2 + n], "big")]


def pdfsig_cades(pdf: Path, db: str, root_pem: Path, *options: str) -> list[tuple[str, str, str]]:
    """pdfsig's ``(signer, signature validation, certificate validation)`` of each CAdES signature, with
    poppler's catch-all certificate line (:data:`POPPLER_GENERIC_CERT_ERROR`, which its stale-error bug gives
    for chains NSS verified) settled by OpenSSL: ``"Certificate is Trusted. (OpenSSL)"`` when
    :func:`openssl_cms_verify` verifies that signature and its chain to ``root_pem``, else pdfsig's line kept.
    A named failure (revoked, expired, unknown or untrusted issuer) is never replaced."""
    rows = [(s["Signer Certificate Common Name"], s["Signature Validation"], s["Certificate Validation"])
            for s in pdfsig(pdf, db, *options) if s.get("Signature Type") == CADES]
    if any(c == POPPLER_GENERIC_CERT_ERROR for _, _, c in rows):
        checked = openssl_cms_verify(pdf, root_pem)
        assert [n for n, _, _ in checked] == [n for n, _, _ in rows], (checked, rows)
        rows = [(n, v, "Certificate is Trusted. (OpenSSL)" if c == POPPLER_GENERIC_CERT_ERROR and ok else c)
                for (n, v, c), (_, ok, _) in zip(rows, checked)]
    return rows


def pdfsig_trusts_all(pdf: Path, db: str) -> bool:
    """Whether pdfsig finds at least one signature and calls every one valid and trusted."""
    sigs = pdfsig(pdf, db)
    return bool(sigs) and all(s.get("Signature Validation") == "Signature is Valid."
                              and s.get("Certificate Validation") == "Certificate is Trusted." for s in sigs)


def _reference_verifier():
    """scripts/verify_dsse.py as a module: the reference verifier the project ships (securesystemslib and
    hashlib only, none of runtime/); the tests also run it as a user would, through subprocess."""
    path = Path(__file__).resolve().parent.parent / "scripts" / "verify_dsse.py"
    if "verify_dsse" not in sys.modules:
        spec = importlib.util.spec_from_file_location("verify_dsse", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["verify_dsse"] = module
        spec.loader.exec_module(module)
    return sys.modules["verify_dsse"]


def dsse_problems(run_dir: Path, pub_pem: Path, countersigners: tuple[Path, ...] = ()) -> list[str]:
    """What securesystemslib and hashlib find wrong with a run folder sealed by the Ed25519 key
    ``pub_pem`` ([] when nothing), by the rule of reports/README.md (issue 27 §4): the envelope's
    signature (and each countersigner's in ``countersigners``), the predicate against ``manifest.json``,
    each subject's sha256 over its signed length (``report.pdf``: its sealed revision, the first
    ``annotations.bytes`` bytes; what ``audit sign`` appends is the PDF signatures' to cover), and files
    that no subject names."""
    return _reference_verifier().problems(run_dir, pub_pem, countersigners)


# ------------------------------------------- the reference verifier as a user runs it (issue 27 §4)

#: The shipped reference verifier (securesystemslib and hashlib only).
VERIFY_DSSE = Path(__file__).resolve().parent.parent / "scripts" / "verify_dsse.py"


def verify_dsse_cli(run_dir: Path, pub: Path, *countersigners: Path, cwd: Path) -> subprocess.CompletedProcess:
    """``python scripts/verify_dsse.py RUN --pubkey PUB [--countersigner C ...]`` in a fresh interpreter."""
    args = [sys.executable, str(VERIFY_DSSE), str(run_dir), "--pubkey", str(pub)]
    for c in countersigners:
        args += ["--countersigner", str(c)]
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)


def _sealed_bytes(run: Path) -> int:
    manifest = json.loads((run / "manifest.json").read_text())
    return next(a["bytes"] for a in manifest["artifacts"] if a["path"] == "report.pdf")


def _edit_statement(run: Path, edit, resign=None) -> None:
    """Apply ``edit`` to the signed Statement of ``run``; keep the signatures, or with ``resign`` (an
    Ed25519 private key of `cryptography`) replace them with that key's (a forger's re-seal)."""
    env = json.loads((run / "manifest.dsse.json").read_text())
    stmt = json.loads(base64.b64decode(env["payload"]))
    edit(stmt)
    payload = json.dumps(stmt, sort_keys=True, separators=(",", ":")).encode()
    env["payload"] = base64.b64encode(payload).decode()
    if resign is not None:
        t = env["payloadType"].encode()
        pae = b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)  # DSSE v1.0.2 protocol.md
        raw = resign.public_key().public_bytes_raw()
        env["signatures"] = [{"keyid": hashlib.sha256(raw).hexdigest(),
                              "sig": base64.b64encode(resign.sign(pae)).decode()}]
    (run / "manifest.dsse.json").write_text(json.dumps(env, indent=2) + "\n")


def _report_subject(stmt: dict) -> dict:
    return next(s for s in stmt["subject"] if s["name"] == "report.pdf")


def tampered_copies(run: Path, where: Path) -> Iterator[tuple[str, str, Path]]:
    """Tampered copies of the sealed (possibly countersigned) run folder ``run``, made under ``where``:
    ``(case, the file whose FAIL line the case must produce, the copy)``."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    sealed, total = _sealed_bytes(run), (run / "report.pdf").stat().st_size
    whole = hashlib.sha256((run / "report.pdf").read_bytes()).hexdigest()

    def flip(name: str, pos: int):
        def do(copy: Path) -> None:
            data = bytearray((copy / name).read_bytes())
            data[pos] ^= 0x01
            (copy / name).write_bytes(bytes(data))
        return do

    def truncate(copy: Path) -> None:
        with open(copy / "report.pdf", "r+b") as fh:
            fh.truncate(sealed - 100)

    def claim_whole_file(stmt: dict) -> None:  # "the countersigned file is the sealed one"
        s = _report_subject(stmt)
        s["digest"]["sha256"] = whole
        s.setdefault("annotations", {})["bytes"] = total

    def shorter_claim(stmt: dict) -> None:
        _report_subject(stmt).setdefault("annotations", {})["bytes"] = sealed - 1

    def manifest_length(copy: Path) -> None:
        m = json.loads((copy / "manifest.json").read_text())
        next(a for a in m["artifacts"] if a["path"] == "report.pdf")["bytes"] = total
        (copy / "manifest.json").write_text(json.dumps(m, indent=2, ensure_ascii=False) + "\n")

    def predicate_changed(stmt: dict) -> None:
        stmt["predicate"]["seed"] += 1

    cases = {
        "sealed-revision-byte": ("report.pdf", flip("report.pdf", sealed // 2)),
        "sealed-revision-last-byte": ("report.pdf", flip("report.pdf", sealed - 1)),
        "other-artifact-byte": ("metrics.csv", flip("metrics.csv", 10)),
        "truncated-report": ("report.pdf", truncate),
        "payload-changed": ("manifest.dsse.json", lambda c: _edit_statement(c, predicate_changed)),
        "length-claim-whole-file": ("manifest.dsse.json", lambda c: _edit_statement(c, claim_whole_file)),
        "length-claim-shorter": ("manifest.dsse.json", lambda c: _edit_statement(c, shorter_claim)),
        "length-claim-in-manifest-json": ("manifest.json", manifest_length),
        "re-sealed-by-a-forger": ("manifest.dsse.json",
                                  lambda c: _edit_statement(c, claim_whole_file, resign=Ed25519PrivateKey.generate())),
        "file-added": ("notes.txt", lambda c: (c / "notes.txt").write_text("added later\n")),
    }
    for case, (file, tamper) in cases.items():
        copy = where / case / run.name
        shutil.copytree(run, copy)
        tamper(copy)
        yield case, file, copy
