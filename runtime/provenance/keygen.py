"""Creating key material: ``audit keygen`` writes a key directory (the layout of
:mod:`runtime.provenance.keys`): a new Ed25519 manifest key (or an imported one), and a self-signed
X.509 certificate with its RSA key for the PDF (or an organisation's imported PKCS#12 file, or PEM
certificate and key, checked before anything is written), and ``config.toml``."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from runtime.provenance.keys import (CONFIG, MANIFEST_KEY, MANIFEST_PUB, MSG_MISMATCH, MSG_NOT_ED25519, SIGNER_CRT,
                                     SIGNER_KEY, SIGNER_P12, TSA_CRT, KeyMaterialError, SigningKeys, _load_p12,
                                     _load_private, _read, _same_key, load_certs, load_keys, validity_problems)


#: RSA keeps the PDF signature readable by every PDF viewer (Ed25519 PDF signatures are not yet).
RSA_BITS = 3072
DEFAULT_DAYS = 1825

MSG_EXISTS = "the key directory {dir} already has {files}; pass --force to replace them (earlier runs stay verifiable only with the old public key and certificate)"
MSG_PEM_PAIR = "--cert and --key go together (an organisation's PEM certificate and its private key)"
MSG_BOTH = "give either --p12 or --cert/--key, not both"
MSG_ROLE_IMPORTED = ("--role and --organisation describe a certificate keygen creates; an imported certificate keeps "
                     "its own subject ({subject})")
#: id-kp-documentSigning (RFC 9336), with emailProtection in the self-signed certificate's extendedKeyUsage.
DOCUMENT_SIGNING_EKU = "1.3.6.1.5.5.7.3.36"


def write_config(key_dir: Path, *, tsa: str | None) -> None:
    """Write ``config.toml`` (the settings ``audit keygen`` was given)."""
    path = Path(key_dir) / CONFIG
    if tsa is None:
        path.unlink(missing_ok=True)
        return
    path.write_text("# audit-compiler key directory settings (audit keygen)\n[signing]\n"
                    f"# RFC 3161 time-stamping authority: PAdES B-LTA reports and timestamped manifests\n"
                    f"tsa = {_toml_string(tsa)}\n", encoding="utf-8")


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.chmod(path, 0o600)


def self_signed_certificate(key, name: str, days: int, organisation: str | None = None, role: str | None = None):
    """A self-signed X.509 certificate for PDF signing.

    Subject: common name ``name``, ``title`` ``role`` and organisation ``organisation`` (issue 16).
    Extensions: basicConstraints CA:FALSE; keyUsage digitalSignature + nonRepudiation; extendedKeyUsage
    emailProtection (what NSS, and so poppler's ``pdfsig``, requires of a document signer) and
    documentSigning (RFC 9336); subjectAltName (the subject as a directoryName); subject and authority
    key identifiers (the same key: self-signed). poppler 22.12 reads NSS's last error code even when the
    certificate verified, so a lookup of an absent extendedKeyUsage or subjectAltName made ``pdfsig``
    report "Unknown issue with Certificate" for a certificate NSS accepts.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, name)]
    if role:
        attrs.append(x509.NameAttribute(NameOID.TITLE, role))
    if organisation:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation))
    subject = x509.Name(attrs)
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    return (
        x509.CertificateBuilder()
        .subject_name(subject).issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=True, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.EMAIL_PROTECTION,
                                              ObjectIdentifier(DOCUMENT_SIGNING_EKU)]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DirectoryName(subject)]), critical=False)
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )


def keygen(key_dir: Path, *, signer: str, organisation: str | None = None, days: int = DEFAULT_DAYS,
           force: bool = False, p12: Path | None = None, cert: Path | None = None, key: Path | None = None,
           manifest_key: Path | None = None, role: str | None = None, tsa: str | None = None,
           tsa_certs: bytes | None = None, vet=None) -> SigningKeys:
    """Create (or import) the key material of a key directory and return it loaded.

    Parameters
    ----------
    key_dir : Path
        Created with mode 0700 when absent.
    signer : str
        Common name of the self-signed certificate (the responsible person).
    role, organisation : str, optional
        The signer's role (the subject's ``title``, e.g. "Lead auditor") and organisation; only for
        a certificate keygen creates.
    tsa : str, optional
        RFC 3161 time-stamping authority URL, written to ``config.toml`` (``audit execute`` then signs
        PAdES B-LTA and timestamps the manifest); ``tsa_certs`` (PEM) is written to ``tsa.crt``.
    p12, cert, key : Path, optional
        An organisation's PKCS#12 file (password in ``$AUDIT_P12_PASSWORD``), or its PEM certificate
        (chain after it) and private key; copied into the directory instead of a self-signed pair.
    manifest_key : Path, optional
        An existing Ed25519 private key (PEM) to use for the manifest instead of a new one.
    vet : callable, optional
        ``vet(certificate, chain)`` is called for an imported certificate before anything is written; it
        raises to refuse it and returns what the loaded keys keep as ``revocation``. ``audit keygen``
        passes the revocation check (:func:`runtime.provenance.revocation.check_chain`, issue 27 §2).

    Raises
    ------
    KeyMaterialError
        Files exist and ``force`` is false; imported material is unreadable or does not match; an
        imported certificate (or one of its chain) is expired or not yet valid (issue 16); or what ``vet``
        raises (a revoked certificate: :class:`runtime.provenance.revocation.RevokedCertificateError`).
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

    if (cert is None) != (key is None):
        raise KeyMaterialError(MSG_PEM_PAIR)
    if p12 is not None and cert is not None:
        raise KeyMaterialError(MSG_BOTH)
    key_dir = Path(key_dir)
    if (role or organisation) and (p12 is not None or cert is not None):
        imported = _load_p12(p12)[1] if p12 is not None else load_certs(cert)[0]
        raise KeyMaterialError(MSG_ROLE_IMPORTED.format(subject=imported.subject.rfc4514_string()))
    taken = [n for n in (MANIFEST_KEY, MANIFEST_PUB, SIGNER_KEY, SIGNER_CRT, SIGNER_P12, CONFIG, TSA_CRT)
             if (key_dir / n).exists()]
    if taken and not force:
        raise KeyMaterialError(MSG_EXISTS.format(dir=key_dir, files=", ".join(taken)))
    # read and check every input before writing anything
    if manifest_key is not None:
        mkey = _load_private(manifest_key)
        if not isinstance(mkey, ed25519.Ed25519PrivateKey):
            raise KeyMaterialError(MSG_NOT_ED25519.format(file=manifest_key))
    else:
        mkey = ed25519.Ed25519PrivateKey.generate()
    pdf_files: dict[str, bytes] = {}
    if p12 is not None:
        data = _read(p12)
        _load_p12(p12, data)
        pdf_files[SIGNER_P12] = data
    elif cert is not None:
        kdata, cdata = _read(key), _read(cert)
        pkey, (c, *_) = _load_private(key, kdata), load_certs(cert, cdata)
        if not _same_key(pkey, c):
            raise KeyMaterialError(MSG_MISMATCH.format(key=key, cert=cert))
        pdf_files[SIGNER_KEY] = pkey.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption())
        pdf_files[SIGNER_CRT] = cdata if b"-----BEGIN" in cdata else c.public_bytes(serialization.Encoding.PEM)
    else:
        pkey = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
        c = self_signed_certificate(pkey, signer, days, organisation, role)
        pdf_files[SIGNER_KEY] = pkey.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption())
        pdf_files[SIGNER_CRT] = c.public_bytes(serialization.Encoding.PEM)
    if p12 is not None or cert is not None:  # an imported certificate must be able to sign now
        if p12 is not None:
            _, imported, chain = _load_p12(p12, pdf_files[SIGNER_P12])
        else:
            imported, *chain = load_certs(cert, pdf_files[SIGNER_CRT])
        problems = validity_problems([imported, *chain], dt.datetime.now(dt.timezone.utc))
        if problems:
            raise KeyMaterialError("; ".join(problems) + "; keygen refuses a certificate that cannot sign now")
        revocation = vet(imported, chain) if vet is not None else None  # revoked: refused before any write
    else:
        revocation = None

    key_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(key_dir, 0o700)
    for n in taken:
        (key_dir / n).unlink()
    _write_private(key_dir / MANIFEST_KEY, mkey.private_bytes(serialization.Encoding.PEM,
                                                              serialization.PrivateFormat.PKCS8,
                                                              serialization.NoEncryption()))
    (key_dir / MANIFEST_PUB).write_bytes(mkey.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    for name, data in pdf_files.items():
        if name == SIGNER_CRT:
            (key_dir / name).write_bytes(data)
        else:
            _write_private(key_dir / name, data)
    write_config(key_dir, tsa=tsa)
    if tsa_certs:
        (key_dir / TSA_CRT).write_bytes(tsa_certs)
    loaded = load_keys(key_dir)
    assert loaded is not None
    loaded.revocation = revocation
    if SIGNER_P12 in pdf_files:  # the certificate is public: keep a PEM copy beside the PKCS#12 file
        (key_dir / SIGNER_CRT).write_bytes(loaded.cert_pem())
    return loaded


__all__ = ["keygen", "self_signed_certificate", "write_config"]
