"""A local test PKI for the signature tests (issue 16), built with certomancer (pyHanko's test-PKI tool).

Root CA -> intermediate CA -> signers (an auditor, a reviewer, and signers that are expired, not yet
valid or revoked); an OCSP responder and a CRL repository for each CA; an RFC 3161 time-stamping
authority (TSA). Certomancer's Animator (a WSGI application) serves the TSA, OCSP, CRLs and
certificates over HTTP on 127.0.0.1; :func:`serve` starts it in a thread.

Validity dates are relative to the moment the PKI is built, so that a test can move the verifier's
clock past a signer's expiry (``SIGNER_DAYS``) while the CAs and the TSA stay valid (``CA_YEARS``).
The keys are fresh RSA-2048 keys written to the PKI folder (test material, never for real use).

Used by the pytest fixture ``test_pki`` (tests/conftest.py); ``python -m tests.pki FOLDER`` builds
one and serves it until interrupted (prints the TSA URL and the root certificate's path), to try
``audit execute --tsa`` by hand.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass, field
from pathlib import Path

ARCH = "audit-test"
#: Days the auditor's and reviewer's certificates stay valid after the PKI is built.
SIGNER_DAYS = 30
CA_YEARS = 10
KEYS = ("root", "interm", "tsa", "ocsp", "auditor", "reviewer", "expired", "notyet", "revoked", "compromised")
#: Days after the build time at which the "compromised" signer's certificate is revoked: it signs now, and a
#: test moves the PKI's clock (:meth:`TestPKI.set_time`) past this day to verify after the revocation.
COMPROMISED_AFTER_DAYS = 2
#: Signer certificates: label -> (common name, role (the subject's title), valid from, valid to) as
#: offsets in days from the build time, and the days before the build time it was revoked (or None;
#: negative: revoked that many days after the build time).
SIGNERS = {
    "auditor": ("Alice Auditor", "Lead auditor", -1, SIGNER_DAYS, None),
    "reviewer": ("Rob Reviewer", "Reviewer", -1, SIGNER_DAYS, None),
    "expired": ("Eve Expired", "Lead auditor", -60, -30, None),
    "notyet": ("Nora Notyet", "Lead auditor", 30, 60, None),
    "revoked": ("Rex Revoked", "Lead auditor", -10, SIGNER_DAYS, 2),
    "compromised": ("Carl Compromised", "Lead auditor", -1, SIGNER_DAYS, -COMPROMISED_AFTER_DAYS),
}


def _iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S+0000")


def _write_keys(folder: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    folder.mkdir(parents=True, exist_ok=True)
    for name in KEYS:
        path = folder / f"{name}.key.pem"
        if not path.exists():
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))


def config(url_prefix: str, now: dt.datetime) -> dict:
    """The certomancer configuration (a dict; see certomancer's docs/config.md)."""
    def days(n: float) -> str:
        return _iso(now + dt.timedelta(days=n))

    ca_from, ca_to = days(-365), days(365 * CA_YEARS)
    ku = lambda *p: {"id": "key_usage", "critical": True, "smart-value": {"schema": "key-usage", "params": list(p)}}  # noqa: E731
    ca = {"id": "basic_constraints", "critical": True, "value": {"ca": True}}
    # emailProtection: what NSS (and so poppler's pdfsig) checks for a document signer; 1.3.6.1.5.5.7.3.36:
    # id-kp-documentSigning (RFC 9336)
    eku = {"id": "extended_key_usage", "value": ["email_protection", "1.3.6.1.5.5.7.3.36"]}
    revinfo = [{"id": "crl_distribution_points", "smart-value": {"schema": "crl-dist-url", "params": {"crl-repo-names": ["interm"]}}},
               {"id": "authority_information_access",
                "smart-value": {"schema": "aia-urls", "params": {"ocsp-responder-names": ["interm"]}}}]
    certs = {
        "root": {"subject": "root", "issuer": "root", "validity": {"valid-from": ca_from, "valid-to": ca_to},
                 "extensions": [ca, ku("digital_signature", "key_cert_sign", "crl_sign")]},
        "interm": {"subject": "interm", "issuer": "root", "validity": {"valid-from": ca_from, "valid-to": ca_to},
                   "extensions": [ca, ku("digital_signature", "key_cert_sign", "crl_sign"),
                                  {"id": "crl_distribution_points",
                                   "smart-value": {"schema": "crl-dist-url", "params": {"crl-repo-names": ["root"]}}}]},
        "tsa": {"subject": "tsa", "issuer": "root", "validity": {"valid-from": ca_from, "valid-to": ca_to},
                "extensions": [ku("digital_signature", "non_repudiation"),
                               {"id": "extended_key_usage", "critical": True, "value": ["time_stamping"]},
                               {"id": "crl_distribution_points",
                                "smart-value": {"schema": "crl-dist-url", "params": {"crl-repo-names": ["root"]}}}]},
        "ocsp": {"subject": "ocsp", "issuer": "interm", "validity": {"valid-from": ca_from, "valid-to": ca_to},
                 "extensions": [ku("digital_signature"), {"id": "extended_key_usage", "critical": True, "value": ["ocsp_signing"]},
                                {"id": "ocsp_no_check"}]},
    }
    entities = {"root": {"common-name": "Audit Test Root CA"}, "interm": {"common-name": "Audit Test Intermediate CA"},
                "tsa": {"common-name": "Audit Test Time Stamping Authority"},
                "ocsp": {"common-name": "Audit Test OCSP Responder"}}
    for label, (cn, role, start, end, revoked) in SIGNERS.items():
        entities[label] = {"common-name": cn, "title": role}
        spec = {"subject": label, "issuer": "interm", "validity": {"valid-from": days(start), "valid-to": days(end)},
                "extensions": [ku("digital_signature", "non_repudiation"), eku, *revinfo]}
        if revoked is not None:
            spec["revocation"] = {"revoked-since": days(-revoked), "reason": "key_compromise"}
        certs[label] = spec
    return {
        "external-url-prefix": url_prefix,
        "keysets": {"audit-test": {"keys": {k: {"path": f"{k}.key.pem"} for k in KEYS}}},
        "pki-architectures": {ARCH: {
            "keyset": "audit-test",
            "entity-defaults": {"country-name": "BE", "organization-name": "Audit Test PKI"},
            "entities": entities, "certs": certs,
            "services": {
                "ocsp": {"interm": {"for-issuer": "interm", "responder-cert": "ocsp", "signing-key": "ocsp"}},
                "crl-repo": {"root": {"for-issuer": "root", "signing-key": "root", "simulated-update-schedule": "P90D"},
                             "interm": {"for-issuer": "interm", "signing-key": "interm",
                                        "simulated-update-schedule": "P90D"}},
                "time-stamping": {"tsa": {"signing-key": "tsa", "signing-cert": "tsa"}},
                "cert-repo": {"root": {"for-issuer": "root", "publish-issued-certs": True},
                              "interm": {"for-issuer": "interm", "publish-issued-certs": True}},
            }}},
    }


@dataclass
class TestPKI:
    """A built and served test PKI: files under ``folder``, services under ``url``."""

    __test__ = False  # not a pytest test class

    folder: Path
    url: str
    built_at: dt.datetime
    arch: object = None
    server: object = None
    thread: object = None
    app: object = None
    files: dict = field(default_factory=dict)

    @property
    def tsa_url(self) -> str:
        return f"{self.url}/{ARCH}/tsa/tsa"

    @property
    def root_pem(self) -> Path:
        return self.files["root"]

    def signer_files(self, label: str) -> tuple[Path, Path]:
        """(certificate chain PEM: signer, intermediate, root; private key PEM) of a signer."""
        return self.files[f"{label}.chain"], self.folder / "keys" / f"{label}.key.pem"

    def set_time(self, when: dt.datetime | None) -> None:
        """Answer OCSP, CRL and TSA requests as at ``when`` (None: the real clock again)."""
        self.app.fixed_time = when.replace(microsecond=0) if when is not None else None

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def _whole_second_animator():
    from certomancer.integrations.animator import Animator

    class WholeSecondAnimator(Animator):
        """Service times in whole seconds: NSS (so ``pdfsig``) rejects an OCSP response whose
        GeneralizedTime has fractional seconds (SEC_ERROR_INVALID_TIME, then MALFORMED_RESPONSE)."""

        def at_time(self, request):
            return super().at_time(request).replace(microsecond=0)

    return WholeSecondAnimator


def serve(folder: Path, now: dt.datetime | None = None) -> TestPKI:
    """Build the PKI in ``folder`` and serve it on a free port of 127.0.0.1 (a daemon thread)."""
    from certomancer.integrations.animator import AnimatorArchStore
    from certomancer.registry import CertomancerConfig, CertLabel
    from werkzeug.serving import make_server

    folder = Path(folder)
    now = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0)
    _write_keys(folder / "keys")
    holder: dict = {}
    server = make_server("127.0.0.1", 0, lambda env, start: holder["app"](_ocsp_get_as_post(env), start),
                         threaded=True)
    url = f"http://127.0.0.1:{server.server_port}"
    cfg = CertomancerConfig(config(url, now), key_search_dir=str(folder / "keys"))
    arch = cfg.get_pki_arch(ARCH)
    holder["app"] = _whole_second_animator()(AnimatorArchStore(cfg.pki_archs), with_web_ui=False)
    pki = TestPKI(folder, url, now, arch, server)
    pki.app = holder["app"]
    pem = {}
    for label in ("root", "interm", "tsa", *SIGNERS):
        cert = arch.get_cert(CertLabel(label))
        pem[label] = _pem(cert.dump())
        (folder / f"{label}.crt.pem").write_text(pem[label])
        pki.files[label] = folder / f"{label}.crt.pem"
    for label in SIGNERS:
        chain = folder / f"{label}.chain.pem"
        chain.write_text(pem[label] + pem["interm"] + pem["root"])
        pki.files[f"{label}.chain"] = chain
    pki.thread = threading.Thread(target=server.serve_forever, name="test-pki", daemon=True)
    pki.thread.start()
    return pki


def _ocsp_get_as_post(environ: dict) -> dict:
    """RFC 6960 App. A.1: an OCSP request may come as ``GET {url}/{base64 of the DER request}``. NSS (so
    ``pdfsig``) tries GET first; certomancer answers only POST, so the GET becomes the same POST here."""
    import base64
    import io
    from urllib.parse import unquote

    path = environ.get("PATH_INFO", "")
    prefix = f"/{ARCH}/ocsp/"
    if environ.get("REQUEST_METHOD") == "GET" and path.startswith(prefix) and path.count("/") > 3:
        label, encoded = path[len(prefix):].split("/", 1)
        body = base64.b64decode(unquote(encoded))
        environ = dict(environ, REQUEST_METHOD="POST", PATH_INFO=prefix + label, CONTENT_LENGTH=str(len(body)),
                       CONTENT_TYPE="application/ocsp-request")
        environ["wsgi.input"] = io.BytesIO(body)
    return environ


def _pem(der: bytes) -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    return x509.load_der_x509_certificate(der).public_bytes(serialization.Encoding.PEM).decode("ascii")


if __name__ == "__main__":  # pragma: no cover - manual use
    import sys
    import time

    p = serve(Path(sys.argv[1] if len(sys.argv) > 1 else "test-pki"))
    print(f"TSA {p.tsa_url}\nroot certificate {p.root_pem}\nauditor {p.signer_files('auditor')}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        p.stop()
