"""Which keys and certificates a verification trusts (issue 27): the explicit files, the key directory or
the checked folder's own copies, and the one rule that a file inside the checked folder is evidence, never a
pin; the key directory an operator names, which must hold something to pin with (issue 41); and, after
the checks, which signers and which seal chain to a pin (``--require-role``, ``--require-pinned``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.provenance import keys as K
from runtime.provenance.sign import COUNTERSIGNATURES, SIGNATURE_FIELD
from runtime.provenance.verify.common import Report, _regular


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


def named_key_dir(key_dir: Path | None, *, needed: bool = True) -> Path | None:
    """The key directory the operator named (``--key-dir``, else ``$AUDIT_KEY_DIR``), checked: a named
    directory that does not exist, or holds neither ``manifest.pub`` nor ``signer.crt``, is an error, so a
    typo never downgrades ``audit verify`` to "nothing was pinned" (issue 41). None when none was named.

    Raises
    ------
    runtime.provenance.keys.KeyMaterialError
        The named directory is missing, or holds no public key or certificate (only when ``needed``).
    """
    from compiler.files import is_regular

    if key_dir is None and not os.environ.get(K.KEY_DIR_ENV):
        return None
    kd, by = (Path(key_dir), "--key-dir") if key_dir is not None else (Path(os.environ[K.KEY_DIR_ENV]), f"${K.KEY_DIR_ENV}")

    if needed and not any(is_regular(kd / n) for n in (K.MANIFEST_PUB, K.SIGNER_CRT)):
        what = "is not a folder" if not kd.is_dir() else f"holds neither {K.MANIFEST_PUB} nor {K.SIGNER_CRT}"
        raise K.KeyMaterialError(f"{kd} (named by {by}) {what}: nothing there to pin the signer with; name the "
                                 "folder of the signer's public key and certificate, or drop the option")
    return kd


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
    runtime.provenance.keys.KeyMaterialError
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

    from runtime.provenance.sign import read_countersignatures

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


def _asn1_trust(trust: Trust) -> tuple[list, list]:
    """Trust anchors and other certificates for pyHanko: the pinned certificates' self-signed ones (all of
    them when none is self-signed), and the evidence's self-signed ones, which validate but pin nothing
    (each signer is judged pinned or not afterwards, by its validation path: :func:`judge_pins`)."""
    from cryptography.hazmat.primitives.serialization import Encoding

    from runtime.provenance.trusted_time import anchors_and_others, is_self_signed, to_asn1

    pinned = trust.pinned_ders
    pins = [to_asn1(c) for c in trust.pinned_certs]
    evidence = [to_asn1(c) for c in trust.certs if c.public_bytes(Encoding.DER) not in pinned]
    if not pins:
        return anchors_and_others(evidence)
    anchors, others = anchors_and_others(pins)
    return (anchors + [c for c in evidence if is_self_signed(c)], others + [c for c in evidence if not is_self_signed(c)])


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


def check_require_pinned(report: Report, name: str) -> None:
    """``--require-pinned``: the seal must chain to a key or certificate from outside the checked folder."""
    if not report.seal_pinned:
        report.fail(name, f"not pinned ({report.summary.removeprefix('but ')}; --require-pinned): give the signer's "
                          "key or certificate from outside the checked folder (--pubkey/--cert/--key-dir)")
