"""The signed ``report.pdf`` (pyHanko): every PAdES signature and document timestamp, its coverage, the ESS
signing-certificate binding (:func:`ess_problem`), the signer's certificates at the signing time, the
long-term validation of B-LT/B-LTA signatures from the embedded data (:func:`_long_term`,
:func:`_own_revocation_data`), and the tie of each later PDF signature to a countersignature of the
manifest envelope."""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path
from typing import Any

from runtime.provenance import keys as K
from runtime.provenance.sign import ENVELOPE, SIGNATURE_FIELD
from runtime.provenance.verify.common import Report, _utc, _when
from runtime.provenance.verify.trust import Trust, _asn1_trust


#: pyHanko's modification levels a later revision may reach without failing an earlier signature: none,
#: or the validation data and document timestamps of PAdES B-LT/B-LTA (ISO 32000-2 §12.8.4.3).
ALLOWED_LATER_CHANGES = ("NONE", "LTA_UPDATES")
TIME_CLAIMED = "the signing time claimed by the signer (no trusted timestamp)"


def check_pdf(pdf: Path, trust: Trust, report: Report, *, name: str | None = None,
              now: dt.datetime | None = None) -> dict[str, Any] | None:
    """Validate every signature and document timestamp of ``pdf`` (pyHanko); return the facts of the
    first (sealing) signature: field, signer, signed_at, coverage, level, and the PDF's Keywords.

    ``now`` is the verification time (default: the clock); tests move it past a certificate's expiry.
    Each valid signature adds a row to ``report.signers``.
    """
    name = name or pdf.name
    now = _utc(now) or dt.datetime.now(dt.timezone.utc)
    from pyhanko.pdf_utils.reader import PdfFileReader

    try:
        import io

        data = pdf.read_bytes()
        reader = PdfFileReader(io.BytesIO(data), strict=False)
        sigs = reader.embedded_signatures
    except Exception as err:  # noqa: BLE001 - a damaged PDF raises many kinds (PdfReadError, zlib.error, ...)
        report.fail(name, f"not a readable PDF ({type(err).__name__}: {err})")
        return None
    if not sigs:
        report.fail(name, "has no signature")
        return None
    if not data.rstrip(b"\r\n\t\0 ").endswith(b"%%EOF"):  # every revision ends with %%EOF (ISO 32000-1 §7.5.5)
        report.fail(name, "bytes were appended after its last revision's %%EOF (not the entire file is signed)")
    anchors, others = _asn1_trust(trust)
    embedded_only = not anchors  # only the PDF's own embedded certificate is left to check against
    has_dss = "/DSS" in reader.root
    facts: dict[str, Any] = {}
    for i, sig in enumerate(sigs):
        later_doc_ts = any(s.sig_object_type == "/DocTimeStamp" for s in sigs[i + 1:])
        later_sig = any(s.sig_object_type != "/DocTimeStamp" for s in sigs[i + 1:])
        try:
            if sig.sig_object_type == "/DocTimeStamp":
                _check_doc_timestamp(sig, anchors or [sig.signer_cert], others, now, report, name, later_sig)
                continue
            ess = ess_problem(sig)  # the embedded certificate is the one signed with (issue 27 §5)
            if ess is not None:
                report.fail(name, f"signature {sig.field_name!r}: {ess}")
                continue
            row = _check_signature(sig, anchors or [sig.signer_cert], others, now, report, name, has_dss=has_dss,
                                   later_doc_ts=later_doc_ts, later_sig=later_sig)
        except Exception as err:  # noqa: BLE001 - pyHanko raises many kinds on a damaged file; each is a failure
            report.fail(name, f"signature {sig.field_name!r} cannot be validated ({type(err).__name__}: {err})")
            continue
        if row is not None:
            row["embedded_only"] = embedded_only
            report.signers.append(row)
            if not facts:
                facts = {"field": row["field"], "signer": row["name"], "signed_at": row["signed_at"],
                         "coverage": row["coverage"], "level": row["level"]}
    try:
        info = reader.trailer["/Info"] if "/Info" in reader.trailer else {}
        facts["keywords"] = str(info.get("/Keywords", "")) if info else ""
    except Exception as err:  # noqa: BLE001 - a damaged document information dictionary
        report.fail(name, f"its document information cannot be read ({type(err).__name__}: {err})")
        facts["keywords"] = ""
    return facts


def _coverage_problems(sig, status, later_signature: bool = False) -> tuple[str, list[str]]:
    """The signature's coverage, and why it is not acceptable: it covers the whole file, or a whole
    revision followed only by revisions that add validation data and document timestamps (pyHanko's
    difference analysis: modification level NONE or LTA_UPDATES), or, when a later signature follows
    (a countersignature, which must itself verify), revisions that fill signature fields (FORM_FILLING)."""
    cov = getattr(status.coverage, "name", str(status.coverage))
    level = getattr(status.modification_level, "name", str(status.modification_level))
    if cov == "ENTIRE_FILE":
        return cov, []
    later = sig.signed_revision < sig.reader.xrefs.total_revisions - 1
    if cov == "ENTIRE_REVISION" and later:
        if level in ALLOWED_LATER_CHANGES or (later_signature and level == "FORM_FILLING"):
            return cov, []
        return cov, [f"later revisions change the document (modification level {level}), not only validation data"]
    return cov, [f"covers {cov}, not the entire file (bytes were appended after signing)"]


def _check_doc_timestamp(sig, anchors, others, now, report, name, later_sig: bool = False) -> None:
    """A PAdES document timestamp (B-LTA): intact, valid, and its TSA trusted at ``now``."""
    from pyhanko.sign.validation import validate_pdf_timestamp
    from pyhanko_certvalidator import ValidationContext

    vc = ValidationContext(trust_roots=anchors, other_certs=others, allow_fetching=False, moment=now)
    status = validate_pdf_timestamp(sig, validation_context=vc)
    problems = []
    if not status.intact or not status.valid:
        problems.append("not intact or cryptographically invalid")
    elif not status.trusted:
        problems.append(f"its time-stamping authority {status.signing_cert.subject.human_friendly!r} is not trusted "
                        "(give its root certificate with --cert)")
    cov, more = _coverage_problems(sig, status, later_sig)
    problems += more
    if problems:
        report.fail(name, f"document timestamp {sig.field_name!r}: " + "; ".join(problems))
        return
    from runtime.provenance.keys import subject_person

    report.notes.append(f"PDF document timestamp ({name}): valid, by {subject_person(status.signing_cert)['name']} "
                        f"at {_when(_utc(status.timestamp))}; it proves the embedded validation data existed then")


def _check_signature(sig, anchors, others, now, report, name, *, has_dss, later_doc_ts, later_sig=False) -> dict | None:
    """One CAdES signature of the PDF; a failure is recorded and None returned, else the signer's row."""
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko_certvalidator import ValidationContext

    from runtime.provenance.keys import subject_person

    vc = ValidationContext(trust_roots=anchors, other_certs=others, allow_fetching=False, moment=now)
    ts_vc = ValidationContext(trust_roots=anchors, other_certs=others, allow_fetching=False, moment=now)
    status = validate_pdf_signature(sig, vc, ts_validation_context=ts_vc)
    problems = []
    if not status.intact:
        problems.append("not intact (the signed bytes changed)")
    if not status.valid:
        problems.append("cryptographically invalid")
    cov, more = _coverage_problems(sig, status, later_sig)
    problems += more
    tst = status.timestamp_validity
    level = "PAdES B-B" if tst is None else "PAdES B-T"
    claimed = _utc(sig.self_reported_timestamp)
    signed_at, source, tsa = claimed, "signer's clock", None
    if tst is not None:
        if not (tst.intact and tst.valid and tst.trusted):
            problems.append("its signature timestamp is not valid or its time-stamping authority is not trusted "
                            "(give its root certificate with --cert)")
        signed_at, source, tsa = _utc(tst.timestamp), "trusted timestamp", subject_person(tst.signing_cert)["name"]
    if status.intact and status.valid and tst is not None and has_dss and not problems:
        verdict, why = _long_term(sig, anchors, others, now)
        if verdict:
            level = "PAdES B-LTA" if later_doc_ts else "PAdES B-LT"
        else:
            problems.append(f"long-term validation (ETSI EN 319 102-1, pyHanko AdES) fails: {why}")
    elif status.intact and status.valid and not status.trusted:
        problems.append(_untrusted_reason(status, level, now))
    certs = _signature_certs(sig, status, anchors)
    revocation = ""
    if level == "PAdES B-B":
        problems += [f"{p} ({TIME_CLAIMED})" for p in K.validity_problems(certs, claimed or now)]
        problems += [f"{p} (now: without a trusted timestamp (PAdES B-B) the certificate must still be valid when "
                     "the signature is verified)" for p in K.validity_problems(certs, now)]
        if status.intact and status.valid and status.trusted:  # asked online now (issue 27 §2)
            from runtime.provenance.revocation import verify_signer

            revoked, revocation = verify_signer([status.signing_cert, *_path_certs(status)], anchors, moment=now)
            problems += [revoked] if revoked else []
    elif level == "PAdES B-T":
        problems += [f"{p} (the trusted timestamp's time)" for p in K.validity_problems(certs, signed_at)]
    problems = list(dict.fromkeys(problems))
    if problems:
        report.fail(name, f"signature {sig.field_name!r}: " + "; ".join(problems))
        return None
    person = subject_person(status.signing_cert)
    from runtime.provenance.sign import reason_keyid

    reason = sig.sig_object.get("/Reason")
    row = {"field": sig.field_name, **person, "signed_at": _when(signed_at), "time_source": source, "tsa": tsa,
           "level": level, "coverage": cov, "manifest_key": reason_keyid(str(reason) if reason is not None else None),
           "end": sig.byte_range[-2] + sig.byte_range[-1] if sig.byte_range else None,
           "chain": _path_ders(status)}
    when = f"{_when(signed_at)} ({source}" + (f" by {tsa})" if tsa else ")")
    report.notes.append(f"PDF signature ({name}): intact, valid, trusted, {level} (field {sig.field_name}); signer "
                        f"{K.describe_person(person)}, signed {when}" + (f"; {revocation}" if revocation else ""))
    return row


def ess_problem(sig) -> str | None:
    """The CMS signed attribute ``signingCertificateV2`` (RFC 5035, ESS; required by PAdES, ETSI EN 319 142-1
    §5.2.2) must be present and hash the signer's embedded certificate: the signature then binds that
    certificate, so an embedded certificate altered after signing (another name, role or key usage on the
    same key) fails even in lone-PDF mode, where the embedded certificate is its own trust root (issue 27 §5).
    Returns the problem, or None."""
    from pyhanko.sign.general import check_ess_certid
    from pyhanko.sign.validation.generic_cms import get_signing_cert_attr

    from runtime.provenance.revocation import serial_hex

    try:
        attr = get_signing_cert_attr(sig.signer_info["signed_attrs"])
        sid = sig.signer_info["sid"]
        certs = [c.chosen for c in sig.signed_data["certificates"] or []]
        matching = [c for c in certs if sid.name == "issuer_and_serial_number"
                    and c.issuer == sid.chosen["issuer"] and c.serial_number == sid.chosen["serial_number"].native]
    except Exception as err:  # noqa: BLE001 - SignatureValidationError (two attributes), a damaged attribute
        return f"its signing-certificate attribute cannot be read ({type(err).__name__}: {err})"
    if attr is None:
        return "it has no signing-certificate attribute (ESS, RFC 5035): the embedded certificate is not bound to it"
    if not matching:
        return "the certificate it names (issuer and serial number) is not embedded in it"
    cert = matching[0]
    if not check_ess_certid(cert, attr["certs"][0]):
        from cryptography import x509

        c = x509.load_der_x509_certificate(cert.dump())
        return (f"the embedded certificate {K.subject_name(c)!r} (serial {serial_hex(c)}) is not the one it was "
                "signed with (its hash differs from the signed ESS signing-certificate attribute): altered after signing")
    return None


def _path_certs(status) -> list:
    """The asn1crypto certificates of the signer's validation path, leaf excluded, root included."""
    path = getattr(status, "validation_path", None)
    if path is None:
        return []
    leaf = status.signing_cert.dump()
    return [c for c in path.iter_certs(include_root=True) if c.dump() != leaf]


def _path_ders(status) -> list[bytes]:
    """DER bytes of the signer's certificate and of every certificate of its validation path (anchor
    included): what :func:`~runtime.provenance.verify.trust.judge_pins` compares with the pinned certificates."""
    ders = [status.signing_cert.dump()]
    path = getattr(status, "validation_path", None)
    if path is not None:
        ders += [c.dump() for c in path.iter_certs(include_root=True)]
    return ders


def _long_term(sig, anchors, others, now) -> tuple[bool, str]:
    """pyHanko's AdES long-term validation of one signature at ``now`` (ETSI EN 319 102-1 §5.6.3) from the
    document's own validation data (no network), every certificate of the chain with revocation
    information: (passed, reason when not).

    Each certificate is judged by the revocation data about it only (issue 27 §3), so adding a
    countersignature never changes whether an earlier signature validates. The document security store
    holds the OCSP responses of every signer, and pyhanko-certvalidator (0.33) reads an embedded response
    whose CertID names another certificate of the same issuer (RFC 6960 §4.1.1: issuer name and key hashes,
    serial number) as a failed check, not as a response about another certificate. Once a countersignature
    has added its signer's response, the current-time step (§5.3, with the X.509 validation of §5.2.6) then
    ends in CERTIFICATE_CHAIN_GENERAL_FAILURE instead of INDETERMINATE/TRY_LATER (revocation data not fresh,
    §5.2.5) as soon as the signer's own response is past its nextUpdate (ten minutes with the test PKI,
    days with a real CA), and the past signature validation (§5.6.2.4: the time slide of §5.6.2.1 at the
    signature's proof of existence, which the document timestamps give) that proves the status at signing
    time is never reached. :func:`_own_revocation_data` gives pyHanko, per certificate, only the responses
    whose CertID names it. Neither alternative was taken: validating at the signature timestamp's time
    would check the document timestamps (the evidence record, §5.6.3) at a time before they existed, and a
    looser freshness rule (``FreshnessReqType.TIME_AFTER_SIGNATURE``, ``retroactive_revinfo``) would change
    which revocation data count as fresh for every certificate, the time-stamping authorities' included,
    and only hide the misread response behind a passing one.
    """
    import asyncio

    from pyhanko.sign.validation.ades import ades_lta_validation
    from pyhanko.sign.validation.policy_decl import (LocalKnowledge, PdfSignatureValidationSpec,
                                                     RevinfoOnlineFetchingRule, RevocationInfoGatheringSpec,
                                                     SignatureValidationSpec)
    from pyhanko_certvalidator.context import CertValidationPolicySpec
    from pyhanko_certvalidator.ltv.types import ValidationTimingInfo
    from pyhanko_certvalidator.policy_decl import REQUIRE_REVINFO, CertRevTrustPolicy
    from pyhanko_certvalidator.registry import SimpleTrustManager

    policy = CertValidationPolicySpec(trust_manager=SimpleTrustManager.build(trust_roots=anchors),
                                      revinfo_policy=CertRevTrustPolicy(REQUIRE_REVINFO))
    spec = PdfSignatureValidationSpec(SignatureValidationSpec(
        cert_validation_policy=policy, local_knowledge=LocalKnowledge(known_certs=others),
        revinfo_gathering_policy=RevocationInfoGatheringSpec(online_fetching_rule=RevinfoOnlineFetchingRule.LOCAL_ONLY)))
    timing = ValidationTimingInfo(validation_time=now, best_signature_time=now, point_in_time_validation=False)
    with _own_revocation_data():
        result = asyncio.run(ades_lta_validation(sig, spec, timing_info=timing))
    indic = getattr(result.ades_subindic, "name", str(result.ades_subindic))
    if indic == "OK":
        return True, ""
    api = result.api_status
    detail = api.revocation_details if api is not None and api.revocation_details else None
    hint = {"NO_POE": "no proof that the embedded validation data existed before the certificates expired",
            "REVOKED": "a certificate of the chain is revoked",
            "REVOKED_NO_POE": "a certificate of the chain is revoked",
            "OUT_OF_BOUNDS_NO_POE": "a certificate had expired or was revoked, with no proof of the signing time"}
    return False, f"{indic}" + (f" ({hint[indic]})" if indic in hint else "") + (f"; {detail}" if detail else "")


@contextlib.contextmanager
def _own_revocation_data():
    """While active, pyHanko's revocation manager gives each certificate only the embedded OCSP responses
    about it: those whose CertID has its serial number and its issuer's key hash (see :func:`_long_term`).
    A response it cannot read, or one for an attribute certificate, is left to pyHanko. pyHanko has no
    option for this (``ades_lta_validation`` reads the document security store itself), so the selection
    wraps ``RevinfoManager.async_retrieve_ocsps`` and restores it on exit (``audit verify`` validates one
    signature at a time, in one thread)."""
    from asn1crypto import x509
    from pyhanko_certvalidator.revinfo.manager import RevinfoManager

    original = RevinfoManager.async_retrieve_ocsps

    def about(cert, authority, response) -> bool:
        single = response.extract_single_response()
        if single is None or not isinstance(cert, x509.Certificate):
            return True
        cert_id = single["cert_id"]
        key_hash = getattr(authority.public_key, cert_id["hash_algorithm"]["algorithm"].native, None)
        return key_hash is None or (cert_id["serial_number"].native == cert.serial_number
                                    and cert_id["issuer_key_hash"].native == key_hash)

    async def retrieve(self, cert, authority):
        return [r for r in await original(self, cert, authority) if about(cert, authority, r)]

    RevinfoManager.async_retrieve_ocsps = retrieve
    try:
        yield
    finally:
        RevinfoManager.async_retrieve_ocsps = original


def _untrusted_reason(status, level: str, now: dt.datetime) -> str:
    """Why pyHanko did not trust the signer: revoked, expired, or no path to a trusted certificate."""
    rev = status.revocation_details
    if rev is not None:
        return (f"the signer's certificate was revoked on {_when(_utc(rev.revocation_date))} "
                f"({getattr(rev.revocation_reason, 'native', rev.revocation_reason)})")
    indic = getattr(status.trust_problem_indic, "name", str(status.trust_problem_indic))
    if indic in ("OUT_OF_BOUNDS_NO_POE", "EXPIRED"):
        return (f"a certificate of the chain is not valid at {_when(now)} and the signature has no trusted "
                f"timestamp with validation data ({level})")
    return f"signer certificate not trusted ({indic}; give the signer's root certificate with --cert)"


def _signature_certs(sig, status, roots: list) -> list:
    """The signer's certificate, those embedded with it, and the trust roots it was checked against, as
    ``cryptography`` certificates without duplicates (pyHanko does not check a trust root's dates, and a
    self-signed signer is its own root)."""
    from cryptography import x509

    seen, certs = set(), []
    for c in [status.signing_cert, *(getattr(sig, "other_embedded_certs", None) or []), *roots]:
        der = c.dump()
        if der not in seen:
            seen.add(der)
            certs.append(x509.load_der_x509_certificate(der))
    return certs


def check_countersignatures(report: Report) -> None:
    """Tie the PDF's signatures to the envelope's: the sealing signature lies within the sealed bytes;
    every later PDF signature is a countersignature whose signed /Reason names a manifest key that
    countersigned ``manifest.dsse.json``, and every such key has one."""
    sealed = report.sealed_pdf_bytes
    named = set()
    for row in report.signers:
        if row["field"] == SIGNATURE_FIELD:
            if sealed is not None and row.get("end") is not None and row["end"] > sealed:
                report.fail("report.pdf", f"signature {SIGNATURE_FIELD!r} lies after the sealed bytes")
            continue
        key = row.get("manifest_key")
        if key not in report.dsse_countersigners:
            report.fail("report.pdf", f"signature {row['field']!r} by {K.describe_person(row)} names no countersignature "
                                      f"of {ENVELOPE} (its manifest key: {key or 'none'})")
            continue
        named.add(key)
        row["countersignature"] = True
    for key in report.dsse_countersigners:
        if key not in named:
            report.fail(ENVELOPE, f"the countersignature by key {key[:16]}... has no valid PDF countersignature "
                                  "vouching for it in report.pdf")


def pdf_metadata(keywords: str) -> dict[str, str]:
    """``spec-sha256:<hex>, seed:<n>, ...`` from the PDF's Keywords entry."""
    out = {}
    for part in keywords.split(","):
        if ":" in part:
            k, v = part.strip().split(":", 1)
            out[k] = v
    return out
