"""Whether a signer's certificate chain is revoked, asked online of the services it names (issue 27 §2).

A PAdES B-B signature (no trusted timestamp) carries no revocation data: whoever relies on it must ask
the certificate's OCSP responder or CRL distribution point (RFC 6960, RFC 5280 §4.2.1.13), and the answer
holds for the moment it was asked. ``audit keygen``, ``audit compile --key-dir``, ``audit execute`` and
``audit sign`` ask before they sign; ``audit verify`` asks again for a B-B report.

* **revoked** (any certificate of the chain): a hard failure, naming the certificate's subject, serial
  number, revocation date and reason (:class:`RevokedCertificateError`, exit 2).
* **not revoked**: the source (OCSP or CRL) and time are recorded.
* **not checked**: said plainly, never silently: the service could not be reached ("offline"), the
  certificate is self-signed (no service can revoke it), it names no OCSP responder or CRL, or its
  file holds no root to validate the chain against.

With a time-stamping authority (``required=True``) a revocation status that cannot be obtained is a
refusal too, as :func:`runtime.provenance.trusted_time.preflight` has done since issue 16: a B-LTA report embeds
the revocation data, so it must exist when the report is signed.

The check uses pyhanko-certvalidator (the library pyHanko validates signatures with), with fetching on
and revocation in "hard-fail" mode; its aiohttp session is closed in the event loop that opened it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass
from typing import Any

from runtime.provenance.keys import KeyMaterialError, _when, subject_name

#: Seconds each OCSP, CRL or certificate request may take.
NETWORK_TIMEOUT = 10

MSG_REVOKED = ("the certificate {name!r} (serial {serial}) was revoked on {date} (reason: {reason}); "
               "{what} refuses a revoked certificate: obtain a new one and import it with `audit keygen --force`")
MSG_REQUIRED = ("the revocation status of the certificate {name!r} (serial {serial}) could not be obtained "
                "({why}); a trusted timestamp (PAdES B-LTA) embeds it, so {what} stops here: check the network "
                "and the certificate's OCSP/CRL addresses, or sign without --tsa (PAdES B-B)")
MSG_INVALID = "the certificate chain of {name!r} (serial {serial}) does not validate: {why}"


class RevokedCertificateError(KeyMaterialError):
    """A certificate of the signer's chain is revoked, or its status is required and unknown (exit 2).

    ``revoked_at`` (aware datetime or None) and ``reason`` are set when a certificate is revoked."""

    def __init__(self, message: str, *, revoked_at: dt.datetime | None = None, reason: str | None = None):
        super().__init__(message)
        self.revoked_at, self.reason = revoked_at, reason


@dataclass(frozen=True)
class RevocationStatus:
    """What a revocation check found.

    Attributes
    ----------
    checked : bool
        True when an OCSP response or CRL was obtained and said "not revoked" for every certificate of
        the chain that names a service.
    outcome : str
        ``"not revoked"``, ``"offline"``, ``"self-signed"``, ``"no service"`` or ``"no root"``.
    at : str
        When it was asked, UTC, ``YYYY-MM-DD HH:MM:SS UTC``.
    source : str or None
        ``"OCSP"``, ``"CRL"`` or ``"OCSP and CRL"`` when checked.
    detail : str
        Why it was not checked (the network error, ...), empty when checked.
    """

    checked: bool
    outcome: str
    at: str
    source: str | None = None
    detail: str = ""

    def sentence(self) -> str:
        """One line for the terminal and the report, e.g. ``revocation checked: not revoked (OCSP, ...)``."""
        if self.checked:
            return f"revocation checked: not revoked ({self.source}, asked {self.at})"
        why = {"offline": f"offline, the revocation service did not answer ({self.detail})",
               "self-signed": "the certificate is self-signed, so no revocation service can revoke it",
               "no service": "the certificate names no OCSP responder or CRL distribution point",
               "no root": f"the certificate file holds no root to validate the chain against ({self.detail})"}
        return f"revocation not checked: {why.get(self.outcome, self.detail)}"

    def record(self) -> dict[str, Any]:
        """The JSON form kept in ``run.json`` / the manifest's ``signing`` and ``countersignatures.json``."""
        return {"checked": self.checked, "outcome": self.outcome, "at": self.at, "source": self.source,
                "detail": self.detail}


def serial_hex(cert) -> str:
    """A certificate's serial number as colon-free upper-case hex (how CAs print it)."""
    return format(cert.serial_number, "X")


def _names_service(cert) -> bool:
    """The certificate names an OCSP responder (AIA) or a CRL distribution point."""
    from cryptography import x509
    from cryptography.x509.oid import AuthorityInformationAccessOID, ExtensionOID

    try:
        aia = cert.extensions.get_extension_for_oid(ExtensionOID.AUTHORITY_INFORMATION_ACCESS).value
        if any(d.access_method == AuthorityInformationAccessOID.OCSP for d in aia):
            return True
    except x509.ExtensionNotFound:
        pass
    try:
        cert.extensions.get_extension_for_oid(ExtensionOID.CRL_DISTRIBUTION_POINTS)
        return True
    except x509.ExtensionNotFound:
        return False


def check_chain(certs: list, *, what: str, required: bool = False, moment: dt.datetime | None = None,
                extra_anchors: list | None = None) -> RevocationStatus:
    """Ask the services a certificate chain names whether any of its certificates is revoked.

    Parameters
    ----------
    certs : list of cryptography ``x509.Certificate``
        The signer's certificate first, then its chain (intermediates, root) as ``signer.crt`` holds it.
    what : str
        The action that asks, for messages ("keygen", "execute", ...).
    required : bool
        Refuse when the status cannot be obtained (a trusted-timestamp run).
    moment : datetime, optional
        The validation time (default now); revocation is asked of the live services in any case.
    extra_anchors : list, optional
        Further trust roots (asn1crypto), e.g. the pinned roots of ``audit verify``.

    Returns
    -------
    RevocationStatus

    Raises
    ------
    RevokedCertificateError
        A certificate of the chain is revoked (subject, serial, date, reason); or ``required`` and the
        status could not be obtained; or the chain does not validate (wrong issuer, bad signature).
    """
    from runtime.provenance.trusted_time import is_self_signed, to_asn1

    now = dt.datetime.now(dt.timezone.utc)
    at = _when(now)
    leaf = certs[0]
    name, serial = subject_name(leaf), serial_hex(leaf)
    chain = [to_asn1(c) for c in certs]
    if is_self_signed(chain[0]):
        return RevocationStatus(False, "self-signed", at)
    if not any(_names_service(c) for c in certs if not is_self_signed(to_asn1(c))):
        if required:
            raise RevokedCertificateError(MSG_REQUIRED.format(name=name, serial=serial, what=what,
                                                              why="it names no OCSP responder or CRL"))
        return RevocationStatus(False, "no service", at)
    anchors = [c for c in chain if is_self_signed(c)] + list(extra_anchors or [])
    if not anchors:
        detail = "append the CA's root certificate after the intermediates"
        if required:
            raise RevokedCertificateError(MSG_REQUIRED.format(name=name, serial=serial, what=what, why=detail))
        return RevocationStatus(False, "no root", at, detail=detail)
    return _ask(chain, anchors, name=name, serial=serial, what=what, required=required, at=at, moment=moment)


def _ask(chain: list, anchors: list, *, name: str, serial: str, what: str, required: bool, at: str,
         moment: dt.datetime | None) -> RevocationStatus:
    from pyhanko_certvalidator import CertificateValidator, ValidationContext
    from pyhanko_certvalidator.errors import (InsufficientRevinfoError, PathBuildingError, PathValidationError,
                                              RevokedError)
    from pyhanko_certvalidator.fetchers.aiohttp_fetchers import AIOHttpFetcherBackend

    from runtime.provenance.trusted_time import is_self_signed

    async def ask():
        backend = AIOHttpFetcherBackend(per_request_timeout=NETWORK_TIMEOUT)
        vc = ValidationContext(trust_roots=anchors, other_certs=[c for c in chain[1:] if not is_self_signed(c)],
                               allow_fetching=True, revocation_mode="hard-fail", fetcher_backend=backend,
                               moment=moment)
        try:
            await CertificateValidator(chain[0], validation_context=vc).async_validate_path()
            return vc
        finally:
            await backend.close()

    try:
        vc = asyncio.run(ask())
    except RevokedError as err:
        when = err.revocation_dt.astimezone(dt.timezone.utc) if err.revocation_dt else None
        reason = getattr(err.reason, "human_friendly", None) or getattr(err.reason, "native", None) or "unspecified"
        raise RevokedCertificateError(MSG_REVOKED.format(
            name=name, serial=serial, date=_when(when) if when else "an unknown date", reason=reason,
            what=what), revoked_at=when, reason=reason) from None
    except InsufficientRevinfoError as err:
        if required:
            raise RevokedCertificateError(MSG_REQUIRED.format(name=name, serial=serial, what=what,
                                                              why=err.failure_msg)) from None
        return RevocationStatus(False, "offline", at, detail=err.failure_msg)
    except (PathBuildingError, PathValidationError) as err:
        raise RevokedCertificateError(MSG_INVALID.format(name=name, serial=serial,
                                                         why=getattr(err, "failure_msg", str(err)))) from None
    sources = [s for s, found in (("OCSP", vc.ocsps), ("CRL", vc.crls)) if found]
    return RevocationStatus(True, "not revoked", at, " and ".join(sources) or "OCSP")


def verify_signer(chain: list, anchors: list, *, moment: dt.datetime | None = None) -> tuple[str | None, str]:
    """``audit verify`` of a PAdES B-B signature: ask whether its chain is revoked now (issue 27 §2).

    Parameters
    ----------
    chain : list of asn1crypto certificates
        The signer's certificate first, then its validation path.
    anchors : list of asn1crypto certificates
        The trust roots the signature was validated against.
    moment : datetime, optional
        The verification time (default now).

    Returns
    -------
    (failure, sentence)
        ``failure`` is ``"revocation checked: revoked since ..."`` when a certificate of the chain is revoked
        (a B-B signature has no trusted time to show it was made before), else None; ``sentence`` is
        what the verifier is told (checked, or not checked and why).
    """
    from cryptography import x509

    certs = [x509.load_der_x509_certificate(c.dump()) for c in chain]
    try:
        status = check_chain(certs, what="audit verify", moment=moment, extra_anchors=anchors)
    except RevokedCertificateError as err:
        if err.revoked_at is None and err.reason is None:
            return f"revocation checked: {err}", ""
        since = _when(err.revoked_at) if err.revoked_at else "an unknown date"
        return (f"revocation checked: the certificate {subject_name(certs[0])!r} (serial {serial_hex(certs[0])}) "
                f"is revoked since {since} (reason: {err.reason}); a PAdES B-B signature has no trusted time to "
                "show it was made before"), ""
    return None, status.sentence()


def check_keys(keys, *, what: str, required: bool = False) -> RevocationStatus:
    """:func:`check_chain` for a key directory's PDF certificate (``signer.crt``), remembered on ``keys``
    (``keys.revocation``) so that the run records it; asked once per process."""
    status = getattr(keys, "revocation", None)
    if status is None or (required and not status.checked and status.outcome == "offline"):
        status = check_chain([keys.pdf_cert, *keys.pdf_chain], what=what, required=required)
        keys.revocation = status
    return status


__all__ = ["RevocationStatus", "RevokedCertificateError", "check_chain", "check_keys", "serial_hex", "verify_signer"]
