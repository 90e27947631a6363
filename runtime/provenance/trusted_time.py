"""Trusted time and revocation for signing (issue 16): RFC 3161 timestamps and the signer's status.

A time-stamping authority (TSA) signs a token binding a digest to its clock (RFC 3161). With one,

- the PDF is signed PAdES B-LTA (ETSI EN 319 142-1): a signature timestamp (B-T), the validation data of
  every certificate embedded in the document security store (DSS: certificates, CRLs, OCSP responses;
  B-LT), and a document timestamp over all of it (B-LTA), which proves that the validation data existed
  while the certificates were valid, so the report still validates after the signer's certificate expires;
- each signature of ``manifest.dsse.json`` gets a token over the sha256 of its signature bytes, kept in
  ``manifest.timestamps.json`` (the envelope's own fields are fixed by the DSSE specification).

Everything ASN.1 goes through pyHanko and pyhanko-certvalidator (request, token, validation).
Without a TSA a run is signed PAdES B-B, whose time is the signer's own clock; the report and
``audit verify`` say so.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
from dataclasses import dataclass
from typing import Any

from compiler.errors import AuditError

#: Seconds one TSA, OCSP or CRL request may take.
NETWORK_TIMEOUT = 20
TIMESTAMPS = "manifest.timestamps.json"

MSG_TSA_DOWN = ("the time-stamping authority {url} did not answer ({err}); check the URL and the network, "
                "or sign without a trusted timestamp (drop --tsa, and [signing] tsa from the key directory's "
                "config.toml): the report is then PAdES B-B, dated by this machine's clock")
MSG_NO_ANCHOR = ("{file} holds no root (self-signed) certificate: a trusted timestamp with long-term validation "
                 "data needs the whole chain, so append your CA's root certificate after the intermediates")
MSG_SIGNER_STATUS = "the signer's certificate {name!r} cannot be used to sign: {reason}"


class TrustedTimeError(AuditError):
    """The TSA cannot be reached, or the signer's certificate fails an online check (exit 2)."""

    exit_code = 2


def _run(coro):
    return asyncio.run(coro)


def timestamper(url: str):
    """pyHanko's HTTP client for the RFC 3161 TSA at ``url``."""
    from pyhanko.sign.timestamps import HTTPTimeStamper

    return HTTPTimeStamper(url, timeout=NETWORK_TIMEOUT)


def request_token(url: str, digest: bytes) -> bytes:
    """A timestamp token (DER ``ContentInfo`` of ``SignedData`` over a ``TSTInfo``) for a sha256 ``digest``.

    Raises
    ------
    TrustedTimeError
        The TSA did not answer, or refused the request.
    """
    try:
        token = _run(timestamper(url).async_timestamp(digest, "sha256"))
    except Exception as err:  # noqa: BLE001 - aiohttp, TSA status and ASN.1 errors all mean "no token"
        raise TrustedTimeError(MSG_TSA_DOWN.format(url=url, err=f"{type(err).__name__}: {err}")) from None
    return token.dump()


def token_certificates_pem(token: bytes) -> bytes:
    """The certificates a TSA put in its token, PEM (to pin them: ``audit keygen --tsa``)."""
    from asn1crypto import cms, pem

    sd = cms.ContentInfo.load(token)["content"]
    return b"".join(pem.armor("CERTIFICATE", c.chosen.dump()) for c in sd["certificates"] or [])


def token_time(token: bytes) -> dt.datetime:
    """The time a token states (``TSTInfo.genTime``), unverified; :func:`check_token` verifies it."""
    from asn1crypto import cms

    return cms.ContentInfo.load(token)["content"]["encap_content_info"]["content"].parsed["gen_time"].native


@dataclass
class TokenCheck:
    """Outcome of :func:`check_token`: the TSA's time, the TSA's name, and what is wrong ([] when valid)."""

    time: dt.datetime | None
    tsa: str
    problems: list[str]


def check_token(token: bytes, digest: bytes, *, anchors: list, others: list, now: dt.datetime | None = None) -> TokenCheck:
    """Validate a timestamp token over the sha256 ``digest``: intact, signed by a TSA certificate (extended
    key usage timeStamping) that chains to one of ``anchors`` (asn1crypto certificates), valid at ``now``.

    Returns
    -------
    TokenCheck
        ``problems`` names each failure (imprint mismatch, untrusted or expired TSA).
    """
    from asn1crypto import cms
    from pyhanko.sign.validation.generic_cms import validate_tst_signed_data
    from pyhanko.sign.validation.status import TimestampSignatureStatus
    from pyhanko_certvalidator import ValidationContext

    try:
        sd = cms.ContentInfo.load(token)["content"]
        vc = ValidationContext(trust_roots=anchors, other_certs=others, allow_fetching=False, moment=now)
        kwargs = _run(validate_tst_signed_data(sd, vc, lambda algo: _imprint(algo, digest)))
        status = TimestampSignatureStatus(**kwargs)
    except Exception as err:  # noqa: BLE001 - a damaged token raises many kinds; each is a failure
        return TokenCheck(None, "?", [f"the timestamp token cannot be read ({type(err).__name__}: {err})"])
    from runtime.provenance.keys import subject_person

    tsa = subject_person(status.signing_cert)["name"]
    problems = []
    if not status.intact:
        problems.append("the timestamp token does not cover this signature (its message imprint differs)")
    elif not status.valid:
        problems.append("the timestamp token's signature is invalid")
    elif not status.trusted:
        problems.append(f"the time-stamping authority {tsa!r} is not trusted (give its root certificate with --cert)")
    return TokenCheck(status.timestamp, tsa, problems)


def _imprint(algo: str, sha256_digest: bytes) -> bytes:
    if algo != "sha256":
        raise ValueError(f"the token's message imprint uses {algo}, not sha256")
    return sha256_digest


# ------------------------------------------------------------------------------- manifest tokens

def timestamp_envelope(envelope: dict[str, Any], url: str) -> dict[str, Any]:
    """``manifest.timestamps.json``: one token per DSSE signature, over sha256 of its signature bytes."""
    entries = []
    for sig in envelope["signatures"]:
        digest = hashlib.sha256(base64.b64decode(sig["sig"])).digest()
        entries.append({"keyid": sig["keyid"], "signature_sha256": digest.hex(),
                        "token": base64.b64encode(request_token(url, digest)).decode("ascii")})
    return {"tsa": url, "timestamps": entries}


# ---------------------------------------------------------------------------------- preflight

def is_self_signed(cert) -> bool:
    """An asn1crypto certificate whose issuer is its subject (asn1crypto's ``self_signed`` is the string
    "yes", "maybe" or "no", and "no" is truthy)."""
    return cert.self_signed in ("yes", "maybe")


def anchors_and_others(certs: list) -> tuple[list, list]:
    """Split asn1crypto certificates into trust anchors (self-signed) and the others (intermediates, leaves).
    Without any self-signed one, every certificate is an anchor (a pinned certificate)."""
    anchors = [c for c in certs if is_self_signed(c)]
    return (anchors, [c for c in certs if not is_self_signed(c)]) if anchors else (list(certs), [])


def signer_validation_context(keys, *, fetch: bool):
    """A pyhanko-certvalidator context for the signer's own chain: its root (from ``signer.crt``) and the
    TSA certificates pinned in the key directory as anchors, revocation fetched online when ``fetch``."""
    from pyhanko_certvalidator import ValidationContext

    from runtime.provenance.keys import SIGNER_CRT, TSA_CRT, load_certs

    chain = [to_asn1(c) for c in [keys.pdf_cert, *keys.pdf_chain]]
    anchors = [c for c in chain if is_self_signed(c)]
    if not anchors:
        raise TrustedTimeError(MSG_NO_ANCHOR.format(file=keys.key_dir / SIGNER_CRT))
    tsa = [to_asn1(c) for c in load_certs(keys.key_dir / TSA_CRT)] if (keys.key_dir / TSA_CRT).is_file() else []
    return ValidationContext(trust_roots=anchors + [c for c in tsa if is_self_signed(c)],
                             other_certs=[c for c in chain + tsa if not is_self_signed(c)], allow_fetching=fetch,
                             revocation_mode="hard-fail" if fetch else "soft-fail")


def preflight(keys, url: str) -> dt.datetime:
    """Before any work of a run that will be timestamped: the TSA answers (one token over a random digest),
    and the signer's certificate chain validates online now, revocation included (CRL or OCSP).
    Returns the TSA's time.

    Raises
    ------
    TrustedTimeError
        The TSA does not answer; ``signer.crt`` has no root; the chain does not validate (revoked,
        expired, untrusted, revocation status unavailable), named with pyhanko-certvalidator's reason.
    """
    import os

    token = request_token(url, hashlib.sha256(os.urandom(32)).digest())
    from pyhanko_certvalidator import CertificateValidator

    vc = signer_validation_context(keys, fetch=True)
    cert = to_asn1(keys.pdf_cert)

    async def validate():
        try:
            await CertificateValidator(cert, validation_context=vc).async_validate_usage({"non_repudiation"})
        finally:
            await vc.aclose()  # the fetchers' aiohttp session, in the loop that opened it (no "Unclosed" warning)

    try:
        _run(validate())
    except Exception as err:  # noqa: BLE001 - RevokedError, PathValidationError, InsufficientRevinfoError...
        from runtime.provenance.keys import subject_name

        raise TrustedTimeError(MSG_SIGNER_STATUS.format(name=subject_name(keys.pdf_cert), reason=err)) from None
    return token_time(token)


def to_asn1(cert):
    """An asn1crypto certificate (pyHanko's type) from a ``cryptography`` one."""
    from asn1crypto import x509
    from cryptography.hazmat.primitives import serialization

    return x509.Certificate.load(cert.public_bytes(serialization.Encoding.DER))
