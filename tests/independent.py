"""Independent verifiers of a signed run (issue 16): code that is not ours checks what we sign.

- the PDF: poppler's ``pdfsig`` (NSS), with the trusted certificates in a throwaway NSS database;
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
