"""Signing keys: an Ed25519 key for the run manifest and an X.509 certificate with its key for the PDF.

A **key directory** holds (file names are the contract; ``audit keygen`` writes them):

=====================  ==========================================================================
``manifest.key``       Ed25519 private key, PKCS#8 PEM, mode 0600 (signs ``manifest.dsse.json``)
``manifest.pub``       its public key, SubjectPublicKeyInfo PEM (copied into every run folder)
``signer.key``         private key of the PDF-signing certificate, PKCS#8 PEM, mode 0600
``signer.crt``         the certificate, PEM, then any chain certificates (copied into every run folder)
``signer.p12``         instead of the two above: an organisation's PKCS#12 file, its password in
                       ``$AUDIT_P12_PASSWORD`` (empty when unset)
``config.toml``        optional settings: ``[signing] tsa = "URL"``, the RFC 3161 time-stamping
                       authority that ``audit execute`` uses by default (``audit keygen --tsa``)
``tsa.crt``            optional: the time-stamping authority's certificates (PEM), written by
                       ``audit keygen --tsa``; ``audit verify --key-dir`` trusts them for timestamps
=====================  ==========================================================================

Private keys never leave this directory: a run folder receives only ``manifest.pub`` and
``signer.crt``. The default directory is ``$AUDIT_KEY_DIR`` or
``$XDG_CONFIG_HOME/audit-compiler/keys`` (``~/.config/audit-compiler/keys``).

EU AI Act Annex IV 2(g) asks for test reports "dated and signed by the responsible persons"; the
certificate's subject names that person: common name, ``title`` (X.520 2.5.4.12: the role, e.g. "Lead
auditor") and organisation (issue 16).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm

from compiler.errors import AuditError

MANIFEST_KEY, MANIFEST_PUB = "manifest.key", "manifest.pub"
SIGNER_KEY, SIGNER_CRT, SIGNER_P12 = "signer.key", "signer.crt", "signer.p12"
CONFIG, TSA_CRT = "config.toml", "tsa.crt"
P12_PASSWORD_ENV = "AUDIT_P12_PASSWORD"
KEY_DIR_ENV = "AUDIT_KEY_DIR"
#: RSA keeps the PDF signature readable by every PDF viewer (Ed25519 PDF signatures are not yet).
RSA_BITS = 3072
DEFAULT_DAYS = 1825

MSG_EXISTS = "the key directory {dir} already has {files}; pass --force to replace them (earlier runs stay verifiable only with the old public key and certificate)"
MSG_PARTIAL = ("the key directory {dir} is incomplete: {detail}. Run `audit keygen --key-dir {dir}` "
               "(or remove the directory to run unsigned)")
MSG_UNREADABLE = "cannot read {file}: {err}"
MSG_MISMATCH = "{key} is not the private key of the certificate {cert}"
MSG_NOT_ED25519 = "{file} is not an Ed25519 private key (the manifest is signed with Ed25519)"
MSG_PEM_PAIR = "--cert and --key go together (an organisation's PEM certificate and its private key)"
MSG_BOTH = "give either --p12 or --cert/--key, not both"
MSG_ROLE_IMPORTED = ("--role and --organisation describe a certificate keygen creates; an imported certificate keeps "
                     "its own subject ({subject})")
MSG_BAD_CONFIG = "{file}: {err}; expected e.g. [signing] tsa = \"https://tsa.example.org/tsr\""
MSG_NOT_YET_VALID = "certificate {name!r} is not yet valid at {at}: valid from {start} to {end} (serial {serial})"
MSG_EXPIRED = "certificate {name!r} had expired at {at}: valid from {start} to {end} (serial {serial})"
MSG_CANNOT_SIGN = "cannot sign with the keys of {dir}: {problems}; renew the certificate (`audit keygen --force`)"
MSG_EXPIRES_SOON = ("certificate {name!r} expires on {end} ({days} day(s) from now); renew it before then "
                    "(`audit keygen --force`), or reports signed after that date cannot be verified")
#: id-kp-documentSigning (RFC 9336), with emailProtection in the self-signed certificate's extendedKeyUsage.
DOCUMENT_SIGNING_EKU = "1.3.6.1.5.5.7.3.36"
#: Days before a certificate's end at which ``keygen`` and ``execute`` warn (issue 16).
EXPIRY_WARNING_DAYS = 90


class KeyMaterialError(AuditError):
    """Key material is missing, incomplete or unreadable (exit 2)."""

    exit_code = 2


def default_key_dir() -> Path:
    """``$AUDIT_KEY_DIR``, else ``$XDG_CONFIG_HOME/audit-compiler/keys`` (``~/.config/...``)."""
    if os.environ.get(KEY_DIR_ENV):
        return Path(os.environ[KEY_DIR_ENV])
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "audit-compiler" / "keys"


def named_key_dir(key_dir: Path | None, *, needed: bool = True) -> Path | None:
    """The key directory the operator named (``--key-dir``, else ``$AUDIT_KEY_DIR``), checked: a named
    directory that does not exist, or holds neither ``manifest.pub`` nor ``signer.crt``, is an error, so a
    typo never downgrades ``audit verify`` to "nothing was pinned" (issue 41). None when none was named.

    Raises
    ------
    KeyMaterialError
        The named directory is missing, or holds no public key or certificate (only when ``needed``).
    """
    from compiler.files import is_regular

    if key_dir is None and not os.environ.get(KEY_DIR_ENV):
        return None
    kd, by = (Path(key_dir), "--key-dir") if key_dir is not None else (Path(os.environ[KEY_DIR_ENV]), f"${KEY_DIR_ENV}")

    if needed and not any(is_regular(kd / n) for n in (MANIFEST_PUB, SIGNER_CRT)):
        what = "is not a folder" if not kd.is_dir() else f"holds neither {MANIFEST_PUB} nor {SIGNER_CRT}"
        raise KeyMaterialError(f"{kd} (named by {by}) {what}: nothing there to pin the signer with; name the "
                               "folder of the signer's public key and certificate, or drop the option")
    return kd


def key_id(public_key) -> str:
    """Key id of an Ed25519 public key: sha256 hex of its 32 raw bytes."""
    from cryptography.hazmat.primitives import serialization

    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def cert_fingerprint(cert) -> str:
    """sha256 hex of a certificate's DER encoding."""
    from cryptography.hazmat.primitives import hashes

    return cert.fingerprint(hashes.SHA256()).hex()


@dataclass
class SigningKeys:
    """Loaded key material of a key directory (private parts stay in memory only)."""

    key_dir: Path
    manifest_key: object                  # Ed25519PrivateKey
    pdf_key: object                       # RSA / EC / Ed25519 private key
    pdf_cert: object                      # cryptography x509.Certificate
    pdf_chain: list = field(default_factory=list)
    #: the signer chain's revocation status once asked (:func:`runtime.revocation.check_keys`), else None
    revocation: object = None

    @property
    def public_key(self):
        return self.manifest_key.public_key()

    @property
    def keyid(self) -> str:
        return key_id(self.public_key)

    def public_pem(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return self.public_key.public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)

    def cert_pem(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in [self.pdf_cert, *self.pdf_chain])

    def signer_name(self) -> str:
        return subject_name(self.pdf_cert)

    def signer(self) -> dict:
        """The responsible person of the PDF certificate: ``name``, ``role``, ``organisation`` (None when
        the subject has no such attribute); see :func:`subject_person`."""
        return subject_person(self.pdf_cert)

    @property
    def tsa(self) -> str | None:
        """The time-stamping authority URL of ``config.toml`` (``[signing] tsa``), or None."""
        return read_config(self.key_dir).get("signing", {}).get("tsa")

    def check_valid(self, now: dt.datetime | None = None) -> list[str]:
        """Refuse certificates that cannot sign now; return the warnings of those ending soon.

        Raises
        ------
        KeyMaterialError
            The signer certificate or one of its chain is expired or not yet valid (the message names
            the dates).
        """
        now = now or dt.datetime.now(dt.timezone.utc)
        certs = [self.pdf_cert, *self.pdf_chain]
        problems = validity_problems(certs, now)
        if problems:
            raise KeyMaterialError(MSG_CANNOT_SIGN.format(dir=self.key_dir, problems="; ".join(problems)))
        return expiry_warnings(certs, now)


def subject_name(cert) -> str:
    """The certificate subject's common name (or the whole subject when it has none)."""
    from cryptography.x509.oid import NameOID

    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(cns[0].value) if cns else cert.subject.rfc4514_string()


def subject_person(cert) -> dict:
    """Who a certificate names: ``name`` (common name, else the whole subject), ``role`` (``title``, else
    the organisational unit) and ``organisation``; None for an attribute the subject lacks.

    Works for a ``cryptography`` certificate and for an ``asn1crypto`` one (pyHanko's)."""
    if hasattr(cert, "subject") and hasattr(cert.subject, "native"):  # asn1crypto
        from cryptography import x509

        cert = x509.load_der_x509_certificate(cert.dump())
    from cryptography.x509.oid import NameOID

    def first(oid):
        vals = cert.subject.get_attributes_for_oid(oid)
        return str(vals[0].value) if vals else None

    return {"name": subject_name(cert),
            "role": first(NameOID.TITLE) or first(NameOID.ORGANIZATIONAL_UNIT_NAME),
            "organisation": first(NameOID.ORGANIZATION_NAME)}


def describe_person(person: dict) -> str:
    """``Name (role, organisation)``, leaving out what is unknown."""
    extra = ", ".join(x for x in (person.get("role"), person.get("organisation")) if x)
    return f"{person['name']} ({extra})" if extra else str(person["name"])


def read_config(key_dir: Path) -> dict:
    """The key directory's ``config.toml`` as a dict ({} when absent).

    Raises
    ------
    KeyMaterialError
        The file is not TOML, or ``[signing] tsa`` is not an http(s) URL.
    """
    import tomllib

    path = Path(key_dir) / CONFIG
    if not path.is_file():
        return {}
    try:
        cfg = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise KeyMaterialError(MSG_BAD_CONFIG.format(file=path, err=err)) from None
    tsa = cfg.get("signing", {}).get("tsa") if isinstance(cfg.get("signing"), dict) else None
    if tsa is not None and not (isinstance(tsa, str) and tsa.startswith(("http://", "https://"))):
        raise KeyMaterialError(MSG_BAD_CONFIG.format(file=path, err=f"signing.tsa is {tsa!r}, not an http(s) URL"))
    return cfg


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


def _when(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def validity_problems(certs: list, at: dt.datetime) -> list[str]:
    """One message per certificate of ``certs`` (cryptography ``x509.Certificate``) that is not valid at
    ``at`` (timezone-aware), naming its validity dates (issue 16). Empty when every one is valid."""
    out = []
    for c in certs:
        start, end = c.not_valid_before_utc, c.not_valid_after_utc
        if at < start:
            out.append(MSG_NOT_YET_VALID.format(name=subject_name(c), at=_when(at), start=_when(start), end=_when(end),
                                                serial=format(c.serial_number, "X")))
        elif at > end:
            out.append(MSG_EXPIRED.format(name=subject_name(c), at=_when(at), start=_when(start), end=_when(end),
                                          serial=format(c.serial_number, "X")))
    return out


def expiry_warnings(certs: list, now: dt.datetime, days: int = EXPIRY_WARNING_DAYS) -> list[str]:
    """A warning per certificate valid at ``now`` that ends within ``days`` days."""
    out = []
    for c in certs:
        left = c.not_valid_after_utc - now
        if c.not_valid_before_utc <= now <= c.not_valid_after_utc and left < dt.timedelta(days=days):
            out.append(MSG_EXPIRES_SOON.format(name=subject_name(c), end=_when(c.not_valid_after_utc),
                                               days=left.days))
    return out


#: The most a key, certificate or PKCS#12 file may hold (a chain of a few certificates is a few KB).
MAX_KEY_FILE_BYTES = 1 << 20


def _read(path: Path) -> bytes:
    """A key or certificate file's bytes: a regular file only (a FIFO or device given as ``--cert`` is never
    opened), at most :data:`MAX_KEY_FILE_BYTES` read (issue 41)."""
    from compiler.files import read_regular

    try:
        return read_regular(path, cap=MAX_KEY_FILE_BYTES, shown=str(path))
    except OSError as err:
        raise KeyMaterialError(MSG_UNREADABLE.format(file=path, err=err.strerror or err)) from None


def _load_private(path: Path, data: bytes | None = None):
    from cryptography.hazmat.primitives import serialization

    data = _read(path) if data is None else data
    try:
        return serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as err:
        raise KeyMaterialError(MSG_UNREADABLE.format(file=path, err=err)) from None


def load_certs(path: Path, data: bytes | None = None) -> list:
    """Every certificate of a PEM (or single DER) file, in file order."""
    from cryptography import x509

    data = _read(path) if data is None else data
    try:
        certs = x509.load_pem_x509_certificates(data) if b"-----BEGIN" in data else [x509.load_der_x509_certificate(data)]
    except (ValueError, UnsupportedAlgorithm) as err:
        raise KeyMaterialError(MSG_UNREADABLE.format(file=path, err=err)) from None
    return certs


def load_public_key(path: Path):
    """An Ed25519 public key from a PEM file."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = serialization.load_pem_public_key(_read(path))
    except (ValueError, UnsupportedAlgorithm) as err:
        raise KeyMaterialError(MSG_UNREADABLE.format(file=path, err=err)) from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyMaterialError(f"{path} is not an Ed25519 public key")
    return key


def _load_p12(path: Path, data: bytes | None = None):
    from cryptography.hazmat.primitives.serialization import pkcs12

    data = _read(path) if data is None else data
    password = os.environ.get(P12_PASSWORD_ENV, "").encode() or None
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, password)
    except (ValueError, UnsupportedAlgorithm) as err:
        raise KeyMaterialError(MSG_UNREADABLE.format(file=path, err=f"{err} (password from ${P12_PASSWORD_ENV})")) from None
    if key is None or cert is None:
        raise KeyMaterialError(MSG_UNREADABLE.format(file=path, err="it holds no private key with its certificate"))
    return key, cert, list(extra or [])


def _same_key(private, cert) -> bool:
    from cryptography.hazmat.primitives import serialization

    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private.public_key().public_bytes(*fmt) == cert.public_key().public_bytes(*fmt)


def load_keys(key_dir: Path) -> SigningKeys | None:
    """Load a key directory; None when it holds no key at all (the run is then unsigned).

    Raises
    ------
    KeyMaterialError
        The directory is incomplete (e.g. a manifest key but no certificate) or a file is unreadable.
    """
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key_dir = Path(key_dir)
    present = {n for n in (MANIFEST_KEY, SIGNER_KEY, SIGNER_CRT, SIGNER_P12) if (key_dir / n).is_file()}
    if not present:
        return None
    if MANIFEST_KEY not in present:
        raise KeyMaterialError(MSG_PARTIAL.format(dir=key_dir, detail=f"no {MANIFEST_KEY}"))
    manifest_key = _load_private(key_dir / MANIFEST_KEY)
    if not isinstance(manifest_key, Ed25519PrivateKey):
        raise KeyMaterialError(MSG_NOT_ED25519.format(file=key_dir / MANIFEST_KEY))
    if SIGNER_P12 in present:
        pdf_key, cert, chain = _load_p12(key_dir / SIGNER_P12)
    elif {SIGNER_KEY, SIGNER_CRT} <= present:
        pdf_key = _load_private(key_dir / SIGNER_KEY)
        cert, *chain = load_certs(key_dir / SIGNER_CRT)
    else:
        raise KeyMaterialError(MSG_PARTIAL.format(dir=key_dir, detail=f"no {SIGNER_CRT} with {SIGNER_KEY}, and no {SIGNER_P12}"))
    if not _same_key(pdf_key, cert):
        raise KeyMaterialError(MSG_MISMATCH.format(key=key_dir / (SIGNER_P12 if SIGNER_P12 in present else SIGNER_KEY),
                                            cert=key_dir / (SIGNER_P12 if SIGNER_P12 in present else SIGNER_CRT)))
    return SigningKeys(key_dir, manifest_key, pdf_key, cert, chain)


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
        passes the revocation check (:func:`runtime.revocation.check_chain`, issue 27 §2).

    Raises
    ------
    KeyMaterialError
        Files exist and ``force`` is false; imported material is unreadable or does not match; an
        imported certificate (or one of its chain) is expired or not yet valid (issue 16); or what ``vet``
        raises (a revoked certificate: :class:`runtime.revocation.RevokedCertificateError`).
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


def copy_public(keys: SigningKeys, folder: Path, *, timestamped: bool = False) -> list[str]:
    """Write the public key and the certificate (never a private key) into ``folder``; for a timestamped
    run also the pinned time-stamping authority's certificates (``tsa.crt``) when the key directory has them."""
    (folder / MANIFEST_PUB).write_bytes(keys.public_pem())
    (folder / SIGNER_CRT).write_bytes(keys.cert_pem())
    written = [MANIFEST_PUB, SIGNER_CRT]
    if timestamped and (keys.key_dir / TSA_CRT).is_file():
        (folder / TSA_CRT).write_bytes((keys.key_dir / TSA_CRT).read_bytes())
        written.append(TSA_CRT)
    return written


__all__ = ["SigningKeys", "load_keys", "keygen", "default_key_dir", "copy_public", "key_id", "validity_problems",
           "expiry_warnings", "subject_person", "describe_person", "read_config"]
