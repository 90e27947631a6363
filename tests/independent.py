"""Independent verifiers of a signed run (issue 16): code that is not ours checks what we sign.

- the PDF: poppler's ``pdfsig`` (NSS), with the trusted certificates in a throwaway NSS database;
- the envelope: securesystemslib's DSSE ``Envelope`` verifies ``manifest.dsse.json``, and the in-toto
  Statement's subjects are checked against the folder with :mod:`hashlib` (what any in-toto verifier does).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

#: Files of a run folder that seal it and so are not subjects of the Statement (runtime.sign.SEAL_FILES).
SEALS = {"manifest.json", "manifest.dsse.json", "manifest.timestamps.json", "countersignatures.json"}


def nss_db(where: Path, *certs: Path, trust: str = "C,C,C") -> str:
    """A new NSS database under ``where/nss`` trusting ``certs`` (certutil); its ``sql:`` address."""
    db = where / "nss"
    db.mkdir()
    subprocess.run(["certutil", "-N", "-d", f"sql:{db}", "--empty-password"], check=True, capture_output=True)
    for i, c in enumerate(certs):
        subprocess.run(["certutil", "-A", "-d", f"sql:{db}", "-n", f"trusted{i}", "-t", trust, "-i", str(c)],
                       check=True, capture_output=True)
    return f"sql:{db}"


def pdfsig(pdf: Path, db: str) -> list[dict[str, str]]:
    """pdfsig's report, one dict per signature (its ``- Key: value`` lines)."""
    out = subprocess.run(["pdfsig", "-nssdir", db, str(pdf)], capture_output=True, text=True, timeout=120).stdout
    sigs: list[dict[str, str]] = []
    for line in out.splitlines():
        if line.startswith("Signature #"):
            sigs.append({})
        elif line.strip().startswith("- ") and sigs:
            key, _, value = line.strip()[2:].partition(": ")
            sigs[-1][key] = value or key
    return sigs


def pdfsig_trusts_all(pdf: Path, db: str) -> bool:
    """Whether pdfsig finds at least one signature and calls every one valid and trusted."""
    sigs = pdfsig(pdf, db)
    return bool(sigs) and all(s.get("Signature Validation") == "Signature is Valid."
                              and s.get("Certificate Validation") == "Certificate is Trusted." for s in sigs)


def dsse_problems(run_dir: Path, pub_pem: Path) -> list[str]:
    """What securesystemslib and hashlib find wrong with a run folder sealed by the Ed25519 key
    ``pub_pem`` ([] when nothing): the envelope's signature, the predicate against ``manifest.json``,
    each subject's sha256 against its file, and files that no subject names."""
    from cryptography.hazmat.primitives.serialization import load_pem_public_key
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey

    pub = load_pem_public_key(pub_pem.read_bytes())
    keyid = hashlib.sha256(pub.public_bytes_raw()).hexdigest()  # the documented key id: sha256 of the raw key
    key = SSlibKey.from_crypto(pub, keyid=keyid, scheme="ed25519")
    try:
        envelope = Envelope.from_dict(json.loads((run_dir / "manifest.dsse.json").read_bytes()))
        envelope.verify([key], threshold=1)
        stmt = json.loads(envelope.payload)
    except Exception as exc:  # any failure of the independent parser/verifier is a failed check
        return [f"manifest.dsse.json: {type(exc).__name__}: {exc}"]
    problems = []
    try:
        # manifest.json is the signed predicate, as the stdlib writes it with indent=2 (documented in the README)
        expected = (json.dumps(stmt["predicate"], indent=2, ensure_ascii=False) + "\n").encode()
        if (run_dir / "manifest.json").read_bytes() != expected:
            problems.append("manifest.json: differs from the signed predicate")
    except OSError as exc:
        problems.append(f"manifest.json: {exc}")
    named = set()
    for s in stmt["subject"]:
        named.add(s["name"])
        p = run_dir / s["name"]
        if not p.is_file() or hashlib.sha256(p.read_bytes()).hexdigest() != s["digest"]["sha256"]:
            problems.append(f"{s['name']}: missing or sha256 differs from the signed subject")
    for p in sorted(run_dir.rglob("*")):
        rel = p.relative_to(run_dir).as_posix()
        if p.is_file() and rel not in named and rel not in SEALS:
            problems.append(f"{rel}: not a signed subject")
    return problems
