"""``audit verify``: check a run folder (or a lone report.pdf) against its signatures.

For a run folder: the DSSE envelope's Ed25519 signature; that ``manifest.json`` and the envelope are
byte for byte what audit-compiler writes for the signed Statement; every artifact's sha256; that no
file was added; the envelope's RFC 3161 timestamps when the manifest promises them; every PAdES
signature and document timestamp of the PDF (pyHanko: intact, valid, trusted, every certificate valid
at the signing time, the whole file covered by the last one); optionally that a given spec still
resolves to the run's locked digest. Every failure is reported as ``file: reason``; nothing stops at
the first one. Library diagnostics go to :attr:`Report.details` (``audit verify --verbose``).

Signing time (issue 16): a signature with a trusted timestamp and embedded validation data (PAdES
B-LT/B-LTA) is validated at its timestamp's time by pyHanko's AdES engine (ETSI EN 319 102-1), from
the embedded data only, so it still validates after its certificate expires. A signature without one
(PAdES B-B) is dated by the signer's own clock: its certificates must be valid at that claimed time and
now, so it stops validating when the certificate expires.

Trust: the public key and certificates come from ``--pubkey``/``--cert`` (files or folders, several
allowed), else the key directory (``manifest.pub``, ``signer.crt``, ``tsa.crt``), else the copies inside
the run folder. One rule (issue 27): each file is judged by where it resolves; inside the checked run
folder (or a lone PDF's folder) it is evidence, which proves only that nothing changed since signing,
not who signed; only files outside it are pins. Self-signed certificates among them are the trust
anchors (a chain file trusts its root); without any, each pinned certificate is an anchor. A signer is
*pinned* when its validation path holds a pinned certificate (countersigners included: the certificates
of ``countersignatures.json`` are evidence); the seal is pinned when the manifest key is (directly, or
through the pinned sealing certificate whose signed PDF names it). A run folder holds only regular
files and folders: anything else is refused by name and never opened.

Modules: :mod:`~runtime.provenance.verify.trust` (what is trusted and pinned),
:mod:`~runtime.provenance.verify.envelope` (the DSSE manifest envelope, its subjects and timestamps),
:mod:`~runtime.provenance.verify.pdf` (the PDF's signatures and their long-term validation),
:mod:`~runtime.provenance.verify.lock` (the signed lock, the ledger, ``--spec``), and
:mod:`~runtime.provenance.verify.common` (the :class:`Report`). The verifier imports nothing that produces
a run: only :mod:`runtime.run.folder` (the run's state), the other provenance modules, and :mod:`compiler`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import stat
from pathlib import Path

from runtime.provenance import keys as K
from runtime.provenance.sign import ENVELOPE, SIGNATURE_FIELD
from runtime.provenance.verify.common import Failure, Report, _regular, library_logs
from runtime.provenance.verify.envelope import check_artifacts, check_envelope, check_run_id, check_timestamps
from runtime.provenance.verify.lock import check_lock, check_lock_recreated, check_spec, check_spec_lock
from runtime.provenance.verify.pdf import check_countersignatures, check_pdf, pdf_metadata
from runtime.provenance.verify.trust import (Trust, _summarise, check_require_pinned, check_roles, judge_pins,
                                             named_key_dir, resolve_trust)


#: What a run folder may hold: regular files and folders; anything else is refused by name, never opened.
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def check_folder(run_dir: Path, report: Report) -> bool:
    """Every entry of the run folder (hidden ones included, symbolic links not followed) is a regular
    file or a folder: a symbolic link or a FIFO, socket or device is a failure, named, and is not opened
    (a FIFO would block the reader). Returns whether the folder is clean."""
    clean = True
    for top, dirs, files in os.walk(run_dir, followlinks=False):
        for entry in sorted(dirs + files):
            path = Path(top) / entry
            rel = path.relative_to(run_dir).as_posix()
            try:
                mode = os.lstat(path).st_mode
            except OSError as err:
                report.fail(rel, f"cannot be read ({type(err).__name__}: {err})")
                clean = False
                continue
            if stat.S_ISLNK(mode):
                report.fail(rel, f"a symbolic link (to {os.readlink(path)}); a run folder holds only regular files "
                                 "and folders")
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
                report.fail(rel, f"{kind}, not a regular file; a run folder holds only regular files and folders "
                                 "(not opened)")
            else:
                continue
            clean = False
    return clean


#: ``verify`` of a trial run without its PDF (``run.json`` ``report_pdf`` False).
MSG_NO_PDF = "not rendered: a trial run (`audit execute --unsigned --no-pdf`) writes report.html only"
#: ``verify`` of a run folder without ``report.pdf`` that its manifest does not list either (re-sealed without it).
MSG_PDF_MISSING = "missing: a sealed run's report is its signed PDF, and this run folder holds none"


def verify_run(run_dir: Path, *, trust: Trust, spec: Path | None = None, now: dt.datetime | None = None,
               require_roles: list[str] | None = None, require_pinned: bool = False) -> Report:
    """Verify a run folder; see the module docstring for the checks.

    Parameters
    ----------
    now : datetime, optional
        The verification time (default: the clock): what certificates must be valid at, for a signature
        without a trusted timestamp.
    require_roles : list of str, optional
        Roles that must each have signed the PDF validly, by a pinned signer (``audit verify --require-role``).
    require_pinned : bool
        Fail unless the seal (the manifest key) is pinned (``audit verify --require-pinned``).
    """
    run_dir = Path(run_dir)
    trust = dataclasses.replace(trust, pinned_certs=list(trust.pinned_certs))  # pinning below stays here
    report = Report()
    with library_logs(report):
        if not check_folder(run_dir, report):
            report.summary = "but nothing was pinned"
            return report  # nothing in it is opened: a FIFO would block
        _verify_run(run_dir, trust, spec, now, report)
        _summarise(report, trust, run=True)
        if require_roles:
            check_roles(report, require_roles, "report.pdf")
        if require_pinned:
            check_require_pinned(report, K.MANIFEST_PUB)
    return report


def _verify_run(run_dir: Path, trust: Trust, spec: Path | None, now, report: Report) -> None:
    for file, reason in trust.problems:
        report.fail(file, reason)
    from compiler.artifacts import ArtifactError
    from runtime.run.folder import run_state

    try:
        state, run = run_state(run_dir)
    except ArtifactError as err:
        state, run = "unreadable", None
        report.fail("run.json", str(err))
    if state in ("interrupted", "running", "failed"):
        where = f" (stage {run.get('stage')})" if run and run.get("stage") else ""
        spec_shown = run.get("spec_file", "SPEC") if run else "SPEC"
        if state == "running":
            report.fail("run.json", f"the run is still running{where}: not sealed yet")
        else:
            report.fail("run.json", f"the run is {state}{where}, not sealed; complete it with "
                                    f"`audit execute {spec_shown} --resume {run_dir}`")
    stmt = check_envelope(run_dir, trust, report)
    if stmt is not None:
        report.manifest = stmt.get("predicate")
        check_artifacts(run_dir, stmt, report)
        check_run_id(run_dir, report.manifest, run, report)
        check_timestamps(run_dir, stmt, trust, report, now)
        if trust.public_key is not None and (run_dir / K.MANIFEST_PUB).is_file():
            try:
                same = K.key_id(K.load_public_key(run_dir / K.MANIFEST_PUB)) == K.key_id(trust.public_key)
            except K.KeyMaterialError:
                same = False
            if not same:
                report.fail(K.MANIFEST_PUB, "is not the public key the envelope verifies with")
    facts = check_pdf(run_dir / "report.pdf", trust, report, now=now) if (run_dir / "report.pdf").is_file() else None
    if not (run_dir / "report.pdf").exists() and "report.pdf" not in {f.file for f in report.failures}:
        # a sealed run's report is its PDF: a manifest sealed without one verifies nothing a reader is shown
        report.fail("report.pdf", MSG_NO_PDF if run is not None and run.get("report_pdf") is False else MSG_PDF_MISSING)
    if stmt is not None and facts is not None:
        check_countersignatures(report)
    if stmt is not None:
        check_lock(run_dir, report.manifest or {}, trust, report, now)
    if run is not None:
        check_lock_recreated(run_dir, run, report)
    failed = {f.file for f in report.failures}
    # pin transitively: the pinned manifest key signs signer.crt's hash, so its first certificate (the
    # sealing signer's; not the chain's root, which would pin every other signer of that CA) is pinned;
    # a pinned certificate signs the PDF, whose metadata names the manifest key
    judge_pins(report, trust)
    sealing = next((r for r in report.signers if r["field"] == SIGNATURE_FIELD), None)
    if (trust.pub_pinned and trust.public_key is not None and stmt is not None and sealing is not None
            and not sealing["pinned"] and not failed & {K.SIGNER_CRT, ENVELOPE}
            and K.SIGNER_CRT in {s["name"] for s in stmt.get("subject", [])} and _regular(run_dir / K.SIGNER_CRT)):
        try:
            leaf = K.load_certs(run_dir / K.SIGNER_CRT)[:1]
        except K.KeyMaterialError:
            leaf = []
        trust.pinned_certs += leaf
        judge_pins(report, trust)
        if sealing["pinned"]:
            report.notes.append(f"{K.SIGNER_CRT}: authenticated by the pinned manifest signature")
    named = pdf_metadata((facts or {}).get("keywords", "")).get("manifest-ed25519")
    if facts and facts.get("field") and trust.public_key is not None and named:
        if named != K.key_id(trust.public_key):
            report.fail(K.MANIFEST_PUB, f"the signed report.pdf names manifest key {named[:16]}..., "
                                        f"not {K.key_id(trust.public_key)[:16]}...")
        elif not trust.pub_pinned and sealing is not None and sealing["pinned"]:
            trust.pub_pinned = True
            report.notes.append(f"{K.MANIFEST_PUB}: the key named in the signed report.pdf")
    report.unpinned = [n for n, ok in ((K.MANIFEST_PUB, trust.pub_pinned),
                                       (K.SIGNER_CRT, sealing is None or sealing["pinned"])) if not ok]
    if spec is not None:
        m = report.manifest or {}
        check_spec(spec, ((m.get("lock") or {}).get("spec_digest") or {}).get("digest"), report,
                   m.get("resolved_spec"))
        check_spec_lock(spec, m, report)


def verify_pdf(pdf: Path, *, trust: Trust, spec: Path | None = None, now: dt.datetime | None = None,
               require_roles: list[str] | None = None, require_pinned: bool = False) -> Report:
    """Verify a lone report.pdf: its signatures, and optionally that ``spec`` matches its lock digest.
    Certificates inside the PDF's own folder are evidence, not pins (see :func:`~runtime.provenance.verify.trust.resolve_trust`)."""
    trust = dataclasses.replace(trust, pinned_certs=list(trust.pinned_certs))
    report = Report()
    try:
        regular = stat.S_ISREG(os.stat(pdf).st_mode)
    except OSError as err:
        report.fail(str(pdf), f"cannot be read ({type(err).__name__}: {err})")
        return report
    if not regular:  # a FIFO would block the reader
        report.fail(str(pdf), "not a regular file (not opened)")
        return report
    with library_logs(report):
        facts = check_pdf(pdf, trust, report, name=str(pdf), now=now)
        judge_pins(report, trust)
        _summarise(report, trust, run=False)
        if require_roles:
            check_roles(report, require_roles, str(pdf))
        if require_pinned:
            check_require_pinned(report, str(pdf))
    sealing = report.signers[0] if report.signers else None
    report.unpinned = [] if report.seal_pinned else [
        "the certificate embedded in the PDF" if sealing is None or sealing.get("embedded_only")
        else f"certificates inside the {trust.folder_word}"]
    meta = pdf_metadata((facts or {}).get("keywords", ""))
    if meta:
        report.notes.append(f"PDF metadata: spec sha256 {meta.get('spec-sha256', '?')}, seed {meta.get('seed', '?')}")
    if spec is not None:
        check_spec(spec, meta.get("spec-sha256"), report, None)
    return report


__all__ = ["Failure", "Report", "Trust", "named_key_dir", "resolve_trust", "verify_pdf", "verify_run"]
