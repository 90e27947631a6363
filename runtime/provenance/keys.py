"""Signing keys: an Ed25519 key for the run manifest and an X.509 certificate with its key for the PDF.

A **key directory** holds (file names are the contract; ``audit keygen`` writes them,
:mod:`runtime.provenance.keygen`):

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
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm

from compiler.errors import AuditError

MANIFEST_KEY, MANIFEST_PUB = "manifest.key", "manifest.pub"
SIGNER_KEY, SIGNER_CRT, SIGNER_P12 = "signer.key", "signer.crt", "signer.p12"
CONFIG, TSA_CRT = "config.toml", "tsa.crt"
P12_PASSWORD_ENV = "AUDIT_P12_PASSWORD"
KEY_DIR_ENV = "AUDIT_KEY_DIR"
MSG_PARTIAL = ("the key directory {dir} is incomplete: {detail}. Run `audit keygen --key-dir {dir}` "
               "(or remove the directory to run unsigned)")
MSG_UNREADABLE = "cannot read {file}: {err}"
MSG_MISMATCH = "{key} is not the private key of the certificate {cert}"
MSG_NOT_ED25519 = "{file} is not an Ed25519 private key (the manifest is signed with Ed25519)"
MSG_BAD_CONFIG = "{file}: {err}; expected e.g. [signing] tsa = \"https://tsa.example.org/tsr\""
MSG_NOT_YET_VALID = "certificate {name!r} is not yet valid at {at}: valid from {start} to {end} (serial {serial})"
MSG_EXPIRED = "certificate {name!r} had expired at {at}: valid from {start} to {end} (serial {serial})"
MSG_CANNOT_SIGN = "cannot sign with the keys of {dir}: {problems}; renew the certificate (`audit keygen --force`)"
MSG_EXPIRES_SOON = ("certificate {name!r} expires on {end} ({days} day(s) from now); renew it before then "
                    "(`audit keygen --force`), or reports signed after that date cannot be verified")
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
    #: the signer chain's revocation status once asked (:func:`runtime.provenance.revocation.check_keys`), else None
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


def describe_person(person: Any) -> str:
    """``Name (role, organisation)``, leaving out what is unknown.

    ``person`` may come from a file someone else wrote (a lock signature's ``signer``): a value that is
    not a mapping is shown as text, a missing or non-text name as ``?``, a non-text role or organisation
    is left out; never an exception.
    """
    if not isinstance(person, dict):
        return "?" if person in (None, "") else str(person)
    name = person.get("name")
    name = name if isinstance(name, str) and name else "?"
    extra = ", ".join(x for x in (person.get("role"), person.get("organisation")) if isinstance(x, str) and x)
    return f"{name} ({extra})" if extra else name


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


__all__ = ["SigningKeys", "load_keys", "default_key_dir", "copy_public", "key_id", "validity_problems",
           "expiry_warnings", "subject_person", "describe_person", "read_config"]
