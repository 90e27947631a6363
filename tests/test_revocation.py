"""Revocation and dates for every signing step (issue 27 §2), against the local test PKI (tests/pki.py).

The PKI's "revoked" signer was revoked (key compromise) two days before the PKI was built; its
"compromised" signer is revoked ``COMPROMISED_AFTER_DAYS`` after it, so it can sign now and a test moves
the PKI's clock (``TestPKI.set_time``) past that day to verify after the revocation.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from conftest import TINY_SCORES, TINY_SPEC, cli_at, run_cli
from pki import COMPROMISED_AFTER_DAYS, serve
from runtime.provenance import keys as K
from runtime.provenance.verify import resolve_trust, verify_run

pytestmark = pytest.mark.slow
DAY = dt.timedelta(days=1)


def _keygen(pki, label: str, where: Path, *extra: str):
    chain, key = pki.signer_files(label)
    kd = where / f"keys-{label}"
    return kd, run_cli("keygen", "--key-dir", str(kd), "--cert", str(chain), "--key", str(key), *extra, cwd=where)


def _swap_signer(kd: Path, pki, label: str) -> None:
    """Put another PKI signer's certificate and key into a key directory (as if it were revoked after keygen)."""
    chain, key = pki.signer_files(label)
    shutil.copyfile(chain, kd / K.SIGNER_CRT)
    shutil.copyfile(key, kd / K.SIGNER_KEY)


def _spec(work: Path) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    (work / "spec.yaml").write_text(TINY_SPEC)
    (work / "scores.csv").write_text(TINY_SCORES)
    return work


@pytest.mark.parametrize("tsa", [False, True], ids=["no-tsa", "tsa"])
def test_keygen_refuses_a_revoked_certificate_naming_serial_date_and_reason(test_pki, tmp_path, tsa):
    kd, proc = _keygen(test_pki, "revoked", tmp_path, *(["--tsa", test_pki.tsa_url] if tsa else []))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    revoked = K.load_certs(test_pki.signer_files("revoked")[0])[0]
    since = (test_pki.built_at - 2 * DAY).strftime("%Y-%m-%d %H:%M:%S UTC")
    assert f"'Rex Revoked' (serial {revoked.serial_number:X}) was revoked on {since}" in proc.stderr, proc.stderr
    assert "compromised key" in proc.stderr and "audit keygen refuses a revoked certificate" in proc.stderr
    assert not (kd / K.SIGNER_CRT).exists()  # nothing written


def test_keygen_of_a_good_pki_certificate_says_revocation_was_checked(test_pki, tmp_path):
    _, proc = _keygen(test_pki, "auditor", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "revocation checked: not revoked (OCSP" in proc.stdout, proc.stdout


def test_execute_without_a_tsa_and_compile_refuse_a_revoked_signer_before_any_work(test_pki, tmp_path):
    kd, proc = _keygen(test_pki, "auditor", tmp_path)
    assert proc.returncode == 0, proc.stderr
    _swap_signer(kd, test_pki, "revoked")  # revoked after the key directory was made
    work = _spec(tmp_path / "spec")
    proc = run_cli("compile", "spec.yaml", "--key-dir", str(kd), cwd=work)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "'Rex Revoked'" in proc.stderr and "audit compile refuses a revoked certificate" in proc.stderr
    assert not list(work.glob("*.lock*"))  # no lock, no lock signature
    assert run_cli("compile", "spec.yaml", cwd=work).returncode == 0  # unsigned lock, to reach execute
    for extra in ([], ["--tsa", test_pki.tsa_url]):
        proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(kd), *extra, cwd=work)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert "'Rex Revoked'" in proc.stderr and "revoked" in proc.stderr
        if extra:  # with a TSA the preflight (issue 16) refuses first, naming the signer
            assert "the signer's certificate 'Rex Revoked' cannot be used to sign" in proc.stderr
        else:
            assert "audit execute refuses a revoked certificate" in proc.stderr
        assert not (work / "reports").exists()  # refused before the run folder was made


def test_compile_refuses_an_expired_certificate(test_pki, tmp_path):
    kd, proc = _keygen(test_pki, "auditor", tmp_path)
    assert proc.returncode == 0, proc.stderr
    _swap_signer(kd, test_pki, "expired")
    work = _spec(tmp_path / "spec")
    proc = run_cli("compile", "spec.yaml", "--key-dir", str(kd), cwd=work)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "'Eve Expired' had expired" in proc.stderr and "valid from" in proc.stderr
    assert not list(work.glob("*.lock.sig.json"))


@pytest.fixture(scope="session")
def compromised_run(test_pki, tmp_path_factory) -> Path:
    """A PAdES B-B run signed by the "compromised" signer before its revocation."""
    where = tmp_path_factory.mktemp("compromised")
    kd, proc = _keygen(test_pki, "compromised", where)
    assert proc.returncode == 0, proc.stderr
    work = _spec(where / "spec")
    assert run_cli("compile", "spec.yaml", "--key-dir", str(kd), cwd=work).returncode == 0
    proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(kd), cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "signer's certificate: revocation checked: not revoked (OCSP" in proc.stderr, proc.stderr
    return sorted((work / "reports" / "tiny-audit").iterdir())[-1]


def test_a_b_b_run_records_and_prints_that_revocation_was_checked(compromised_run, test_pki):
    run = json.loads((compromised_run / "manifest.json").read_text())
    rev = run["signing"]["revocation"]
    assert rev["checked"] is True and rev["outcome"] == "not revoked" and "OCSP" in rev["source"]
    html = (compromised_run / "report.html").read_text()
    assert "or until it is revoked; revocation checked: not revoked (OCSP" in html
    proc = run_cli("verify", str(compromised_run), "--cert", str(test_pki.root_pem), cwd=compromised_run.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PAdES B-B" in proc.stdout and "revocation checked: not revoked (OCSP" in proc.stdout


def test_a_b_b_run_verified_after_its_signer_was_revoked_fails_naming_the_date(compromised_run, test_pki):
    later = test_pki.built_at + (COMPROMISED_AFTER_DAYS + 1) * DAY
    test_pki.set_time(later)  # the OCSP responder and CRLs answer as on that day
    try:
        trust = resolve_trust(pubkey=None, cert=[test_pki.root_pem], key_dir=None, run_dir=compromised_run)
        report = verify_run(compromised_run, trust=trust, now=later)
        proc = cli_at(later, "verify", str(compromised_run), "--cert", str(test_pki.root_pem), cwd=compromised_run)
    finally:
        test_pki.set_time(None)
    since = (test_pki.built_at + COMPROMISED_AFTER_DAYS * DAY).strftime("%Y-%m-%d %H:%M:%S UTC")
    assert not report.ok
    text = "\n".join(str(f) for f in report.failures)
    assert "revocation checked: the certificate 'Carl Compromised'" in text, text
    assert f"is revoked since {since} (reason: a compromised key)" in text, text
    assert proc.returncode == 6 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert (f"FAIL report.pdf: signature 'AuditSignature': revocation checked: the certificate 'Carl Compromised' "
            f"(serial ") in proc.stderr and f"is revoked since {since}" in proc.stderr, proc.stderr


def test_offline_revocation_is_recorded_as_not_checked(tmp_path):
    """A PKI that is down: keygen, compile and execute sign B-B and say revocation was not checked."""
    pki = serve(tmp_path / "pki")
    kd, proc = _keygen(pki, "auditor", tmp_path)
    assert proc.returncode == 0, proc.stderr
    pki.stop()
    work = _spec(tmp_path / "spec")
    proc = run_cli("compile", "spec.yaml", "--key-dir", str(kd), cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "revocation not checked: offline" in proc.stderr
    proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(kd), cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "revocation not checked: offline" in proc.stderr
    run_dir = sorted((work / "reports" / "tiny-audit").iterdir())[-1]
    rev = json.loads((run_dir / "manifest.json").read_text())["signing"]["revocation"]
    assert rev["checked"] is False and rev["outcome"] == "offline"
    assert "revocation not checked: offline" in (run_dir / "report.html").read_text()
    proc = run_cli("execute", "spec.yaml", "--quiet", "--key-dir", str(kd), "--tsa", pki.tsa_url, cwd=work)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr  # a TSA run needs the status: refused
