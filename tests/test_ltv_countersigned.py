"""Long-term validation that survives countersignatures (issue 27 §3), with the test PKI (tests/pki.py).

Each PAdES B-LTA signature is validated with the revocation data about its own certificates
(``runtime.verify._long_term``), so the OCSP response that a countersignature adds to the document
security store does not change whether the auditor's signature validates. Before, both signatures of a
countersigned run failed long-term validation (CERTIFICATE_CHAIN_GENERAL_FAILURE) as soon as the
embedded responses were past their nextUpdate (ten minutes with the test PKI), and a second reviewer
was refused.

The CLI has no option to move the verifier's clock, so :func:`_cli_at` runs the real ``audit`` entry
point with only ``runtime.verify.verify_run`` given a fixed ``now``; signing (the TSA, the OCSP requests
of ``audit sign``) happens at the real time, as it would for a reviewer who signs a day later.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import cli_at as _cli_at, pki_key_dir
from independent import nss_db, openssl_cms_verify, pdfsig_cades

pytestmark = pytest.mark.slow
DAY = dt.timedelta(days=1)

#: ``python -c`` program: the ``audit`` CLI with the verifier's clock at ``{at}`` (ISO 8601).
@dataclass(frozen=True)
class _Signed:
    name: str
    serial: int
    timestamp: dt.datetime  # the signature timestamp's genTime (RFC 3161)
    not_after: dt.datetime


@dataclass(frozen=True)
class _Response:
    serial: int
    this_update: dt.datetime
    next_update: dt.datetime


def _signatures(pdf: Path) -> list[_Signed]:
    """The PDF's CAdES signatures (document timestamps left out), read with pyHanko and asn1crypto."""
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign.validation.generic_cms import extract_tst_data_iter

    reader = PdfFileReader(io.BytesIO(pdf.read_bytes()), strict=False)
    out = []
    for sig in reader.embedded_signatures:
        if sig.sig_object_type == "/DocTimeStamp":
            continue
        (tst,) = list(extract_tst_data_iter(sig.signer_info, signed=False))
        gen_time = tst["encap_content_info"]["content"].parsed["gen_time"].native
        cert = sig.signer_cert
        out.append(_Signed(cert.subject.native["common_name"], cert.serial_number, gen_time,
                           cert["tbs_certificate"]["validity"]["not_after"].native))
    return out


def _dss_responses(pdf: Path) -> list[_Response]:
    """The OCSP responses in the PDF's document security store: certificate serial and validity window."""
    from asn1crypto import ocsp
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign.validation.dss import DocumentSecurityStore

    reader = PdfFileReader(io.BytesIO(pdf.read_bytes()), strict=False)
    out = []
    for ref in DocumentSecurityStore.read_dss(reader).ocsps:
        basic = ocsp.OCSPResponse.load(ref.get_object().data).basic_ocsp_response
        for single in basic["tbs_response_data"]["responses"]:
            out.append(_Response(single["cert_id"]["serial_number"].native, single["this_update"].native,
                                 single["next_update"].native))
    return out


def _signer_lines(stdout: str) -> list[str]:
    return [ln for ln in stdout.splitlines() if ln.startswith("signer ")]


def test_a_countersigned_b_lta_run_verifies_a_day_and_thirty_days_after_signing(countersigned_run, test_pki, tmp_path):
    pdf = countersigned_run / "report.pdf"
    signed = _signatures(pdf)
    assert [s.name for s in signed] == ["Alice Auditor", "Rob Reviewer"]
    last = max(s.timestamp for s in signed)
    # one OCSP response per signer in the document security store, each good for ten minutes: a day later
    # both are stale, which made both signatures fail before; 30 days later both certificates have expired
    responses = _dss_responses(pdf)
    assert sorted(r.serial for r in responses) == sorted(s.serial for s in signed)
    assert all(r.next_update - r.this_update == dt.timedelta(minutes=10) for r in responses), responses
    assert all(r.next_update < last + DAY for r in responses)
    assert all(s.not_after < last + 30 * DAY for s in signed), signed
    for at in (last + DAY, last + 30 * DAY):
        proc = _cli_at(at, "verify", str(countersigned_run), "--cert", str(test_pki.root_pem),
                       "--require-role", "Lead auditor", "--require-role", "Reviewer", cwd=tmp_path)
        assert proc.returncode == 0, (at, proc.stdout + proc.stderr)
        lines = _signer_lines(proc.stdout)
        assert [ln.split(";")[0] for ln in lines] == ["signer 1: Alice Auditor (Lead auditor, Audit Test PKI)",
                                                     "signer 2: Rob Reviewer (Reviewer, Audit Test PKI)"], proc.stdout
        assert all(ln.endswith("; PAdES B-LTA; pinned") and "(trusted timestamp, Audit Test Time Stamping Authority)"
                   in ln for ln in lines), lines


def test_a_second_reviewer_countersigns_a_run_whose_embedded_responses_are_stale(countersigned_run, test_pki,
                                                                                 tmp_path):
    """``audit sign`` verifies the run first; a day after the first countersignature every embedded OCSP
    response is stale, and the second reviewer is not refused. The second reviewer holds the reviewer's
    certificate in a key directory of their own (a new manifest key): the role must be the certificate's."""
    run = tmp_path / countersigned_run.name
    shutil.copytree(countersigned_run, run)
    at = max(s.timestamp for s in _signatures(run / "report.pdf")) + DAY
    assert all(r.next_update < at for r in _dss_responses(run / "report.pdf"))
    kd = pki_key_dir(test_pki, "reviewer", tmp_path, "--tsa", test_pki.tsa_url)
    proc = _cli_at(at, "sign", str(run), "--key-dir", str(kd), "--role", "Reviewer", "--cert", str(test_pki.root_pem),
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "report.pdf field Countersignature2 (PAdES B-LTA" in proc.stdout, proc.stdout
    assert len(_dss_responses(run / "report.pdf")) == 3
    proc = _cli_at(at, "verify", str(run), "--cert", str(test_pki.root_pem), "--require-role", "Reviewer", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = _signer_lines(proc.stdout)
    assert [ln.split(";")[0] for ln in lines] == ["signer 1: Alice Auditor (Lead auditor, Audit Test PKI)",
                                                 "signer 2: Rob Reviewer (Reviewer, Audit Test PKI)",
                                                 "signer 3: Rob Reviewer (Reviewer, Audit Test PKI)"], proc.stdout
    assert all(ln.endswith("; PAdES B-LTA; pinned") for ln in lines), lines
    # poppler's pdfsig (NSS) checks at the real time, revocation online: all three signatures valid and trusted.
    # Its catch-all certificate line (poppler 22.12 reads a stale NSS error code: independent.POPPLER_GENERIC_CERT_ERROR,
    # met in CI of stops 44, 45 and 53 on the third signature, online and offline) is settled by OpenSSL
    pdf = run / "report.pdf"
    rows = pdfsig_cades(pdf, nss_db(tmp_path, test_pki.root_pem), test_pki.root_pem)
    names = ["Alice Auditor", "Rob Reviewer", "Rob Reviewer"]
    assert [(n, v) for n, v, _ in rows] == [(n, "Signature is Valid.") for n in names], rows
    assert all(c in ("Certificate is Trusted.", "Certificate is Trusted. (OpenSSL)") for _, _, c in rows), rows
    # OpenSSL, on its own: each CMS over its byte range and its chain to the test root
    assert [(n, ok) for n, ok, _ in openssl_cms_verify(pdf, test_pki.root_pem)] == [(n, True) for n in names]
    bad = tmp_path / "tampered.pdf"  # one byte flipped in the first signed range: OpenSSL verifies none
    data = bytearray(pdf.read_bytes())
    data[len(data) // 4] ^= 0x01
    bad.write_bytes(bytes(data))
    assert [(n, ok) for n, ok, _ in openssl_cms_verify(bad, test_pki.root_pem)] == [(n, False) for n in names]
