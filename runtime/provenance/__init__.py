"""Provenance, beside the pipeline: keys and certificates (:mod:`~runtime.provenance.keys`, created by
:mod:`~runtime.provenance.keygen`), signing (:mod:`~runtime.provenance.sign`), trusted time
(:mod:`~runtime.provenance.trusted_time`), revocation (:mod:`~runtime.provenance.revocation`), the signed
lock (:mod:`~runtime.provenance.locksign`), countersignatures (:mod:`~runtime.provenance.countersign`) and
verification (:mod:`runtime.provenance.verify`), which imports nothing that produces a run."""
