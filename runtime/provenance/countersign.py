"""``audit sign``: a reviewer countersigns a sealed run (issue 16; EU AI Act Annex IV 2(g): signed by
the responsible persons).

A countersignature adds, without changing any signed byte:

- an incremental PAdES signature of ``report.pdf`` (field ``Countersignature<N>``, drawn in the report's
  reserved box N), whose signed ``/Reason`` names the countersigner's Ed25519 manifest key; the
  sealing signature stays valid, because the increment only fills a signature field (pyHanko's
  difference analysis: form filling) and adds validation data;
- a second signature in ``manifest.dsse.json`` over the same payload (the signed manifest);
- an entry in ``countersignatures.json`` (a seal file) with the countersigner's public key, certificate
  chain, name, role and organisation, so that any verifier can check both;
- with a time-stamping authority, PAdES B-LTA for the increment and a token for the new envelope
  signature in ``manifest.timestamps.json``.

The manifest keeps the sha256 and byte length of ``report.pdf`` as sealed; ``audit verify`` checks that
the sealed bytes are an unchanged prefix of the file and that what follows is countersignatures only.
The run must verify before it is countersigned.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from compiler.errors import AuditError
from runtime.provenance.sign import COUNTERSIGNATURES, REASON_PREFIX, read_countersignatures


class CountersignError(AuditError):
    """The run cannot be countersigned: it does not verify, is unsigned, or the role differs (exit 2)."""

    exit_code = 2


class UnpinnedAuditorError(CountersignError):
    """The run's auditor cannot be pinned (no key or certificate from outside the run folder) and
    ``--unpinned`` was not given (exit 6, as a failed ``audit verify``)."""

    exit_code = 6


#: ``audit sign`` without a pin of the auditor (issue 27).
MSG_UNPINNED = ("{run}: its auditor is not pinned ({why}): a countersignature would vouch for a run anyone could "
                "have re-signed; give the auditor's key or certificate from outside the run folder (--pubkey FILE "
                "or --cert FILE), or countersign anyway with --unpinned (recorded in countersignatures.json)")


def countersign(run_dir: Path, keys, *, role: str | None = None, tsa: str | None = None, pubkey: Path | None = None,
                cert: list[Path] | None = None, unpinned: bool = False) -> dict[str, Any]:
    """Countersign the sealed run ``run_dir`` with ``keys`` (:class:`runtime.provenance.keys.SigningKeys`).

    Parameters
    ----------
    role : str, optional
        The role the countersigner signs in; it must be the role the certificate names (its ``title``,
        see ``audit keygen --role``), compared without case.
    tsa : str, optional
        RFC 3161 time-stamping authority URL (PAdES B-LTA increment, timestamped envelope signature).
    pubkey, cert : path, optional
        The auditor's public key and trusted certificates (as ``audit verify --pubkey/--cert``); files
        inside the run folder are evidence, not pins (:func:`runtime.provenance.verify.resolve_trust`).
    unpinned : bool
        Countersign although the auditor is not pinned; the entry records ``"auditor_pinned": false``.

    Returns
    -------
    dict
        The new ``countersignatures.json`` entry.

    Raises
    ------
    CountersignError
        The run is unsigned or does not verify (each failure named), the role differs from the
        certificate's, or these keys already signed it.
    UnpinnedAuditorError
        The auditor is not pinned and ``unpinned`` is False (exit 6).
    runtime.provenance.keys.KeyMaterialError
        The certificate is expired or not yet valid.
    """
    from runtime.provenance import keys as K
    from runtime.provenance.sign import (COUNTERSIGN_BOX_ID, COUNTERSIGN_FIELD, ENVELOPE, PAYLOAD_TYPE, TIMESTAMPS, pae,
                              render_json, sign_pdf)
    from runtime.store import atomic_write
    from runtime.provenance.verify import resolve_trust, verify_run

    run_dir = Path(run_dir)
    if not (run_dir / ENVELOPE).is_file():
        raise CountersignError(f"{run_dir}: no {ENVELOPE}; only a signed run can be countersigned")
    person = keys.signer()
    if role is not None and (person["role"] or "").casefold() != role.casefold():
        raise CountersignError(
            f"--role {role!r}: the certificate of {keys.key_dir} names the role {person['role']!r}; the role is part of "
            f"the signer's certificate (create the keys with `audit keygen --role {json.dumps(role)}`)")
    keys.check_valid()
    from runtime.provenance.revocation import check_keys  # a revoked countersigner is refused (issue 27 §2)

    revocation = check_keys(keys, what="audit sign", required=bool(tsa))
    # the countersigner's own key directory is no pin of the auditor: only --pubkey/--cert are
    trust = resolve_trust(pubkey=pubkey, cert=cert, key_dir=run_dir / ".none", run_dir=run_dir)
    report = verify_run(run_dir, trust=trust)
    if not report.ok:
        lines = "\n".join(f"  {f}" for f in report.failures[:10])
        raise CountersignError(f"{run_dir} does not verify, so it cannot be countersigned:\n{lines}")
    if not report.seal_pinned and not unpinned:
        raise UnpinnedAuditorError(MSG_UNPINNED.format(run=run_dir, why=report.summary.removeprefix("but ")))
    envelope = json.loads((run_dir / ENVELOPE).read_text(encoding="utf-8"))
    if keys.keyid in {s["keyid"] for s in envelope["signatures"]}:
        raise CountersignError(f"the manifest key {keys.keyid[:16]}... of {keys.key_dir} already signed {run_dir}")
    if tsa:
        from runtime.provenance.trusted_time import preflight

        preflight(keys, tsa)
    entries = read_countersignatures(run_dir)
    n = len(entries) + 1
    field = f"{COUNTERSIGN_FIELD}{n}"
    who = K.describe_person(person)
    pdf = sign_pdf(run_dir / "report.pdf", keys, tsa=tsa, field=field, box_id=COUNTERSIGN_BOX_ID.format(n=n),
                   heading="Countersigned", reason=f"{REASON_PREFIX}{keys.keyid}; {who}")
    payload = base64.b64decode(envelope["payload"])
    sig = keys.manifest_key.sign(pae(envelope["payloadType"], payload))
    assert envelope["payloadType"] == PAYLOAD_TYPE
    envelope["signatures"].append({"keyid": keys.keyid, "sig": base64.b64encode(sig).decode("ascii")})
    if tsa:
        from runtime.provenance.trusted_time import timestamp_envelope

        new = timestamp_envelope({"signatures": [envelope["signatures"][-1]]}, tsa)["timestamps"]
        path = run_dir / TIMESTAMPS
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"tsa": tsa, "timestamps": []}
        data["timestamps"] += new
        atomic_write(path, render_json(data))
    entry = {"keyid": keys.keyid, "public_key": keys.public_pem().decode("ascii"),
             "certificate": keys.cert_pem().decode("ascii"), "signer": person, "role": person["role"],
             "pdf_field": field, "pdf_profile": pdf["profile"], "tsa": tsa,
             "signed_at": _now(), "auditor_pinned": report.seal_pinned, "revocation": revocation.record()}
    atomic_write(run_dir / COUNTERSIGNATURES, render_json({"countersignatures": [*entries, entry]}))
    atomic_write(run_dir / ENVELOPE, render_json(envelope))
    return entry


def _now() -> str:
    from compiler.lock import utc_now

    return utc_now()
