"""The key of a blind export (issue 15): opaque résumé ids, kept by the auditor.

``audit export --for-vendor`` (:mod:`runtime.export`) writes the résumés under random ids in a random
order; this module makes and finds the key that maps the ids back, so that the ``precomputed``
adapter can read a vendor's ``resume_id, score`` file without importing the pipeline.
"""

from __future__ import annotations

import hashlib
import random
import secrets

import pandas as pd


#: Columns of the key kept in the store and sealed into the run (``blind_key.csv``).
KEY_COLUMNS = ("resume_id", "job_id", "cv_id", "variant", "text_sha256")

MSG_NO_BLIND = ("{spec}: no system has `blind: true`; add a precomputed system whose path is where the vendor's "
                "scores will be, e.g. {{id: vendor, kind: precomputed, path: vendor-scores.csv, blind: true}}, "
                "then compile again")
MSG_NO_KEY = ("system {system!r}: no export key for the résumés of this run in the task store {store}; run "
              "`audit export SPEC --for-vendor DIR` first and have the vendor score that file (if you did, the "
              "résumés generated now differ from the exported ones, or the store was cleared)")

def blind_candidates(candidates: pd.DataFrame, controls: pd.DataFrame | None) -> pd.DataFrame:
    """The résumés a vendor scores blind: the design's, then the placebo résumés of the negative controls
    (issue 38), ``job_id, cv_id, variant, text``; the key and its id cover both, and the shuffle mixes them."""
    cols = ["job_id", "cv_id", "variant", "text"]
    if controls is None or len(controls) == 0:
        return candidates
    return pd.concat([candidates[cols], controls[cols]], ignore_index=True)


def key_id(candidates: pd.DataFrame) -> str:
    """Store id of the export key of these résumés: ``blind-key-`` + the first 20 hex digits of the
    sha256 over every (job_id, cv_id, variant, text) in generation order."""
    h = hashlib.sha256()
    for row in candidates[["job_id", "cv_id", "variant", "text"]].itertuples(index=False):
        h.update("\x1f".join(map(str, row)).encode("utf-8"))
        h.update(b"\x1e")
    return f"blind-key-{h.hexdigest()[:20]}"


def new_key(candidates: pd.DataFrame) -> pd.DataFrame:
    """A fresh key: one opaque id per résumé, rows in a random order (OS randomness, not the spec's seed)."""
    ids: list[str] = []
    seen: set[str] = set()
    while len(ids) < len(candidates):  # drawn one by one: an id says nothing about its résumé's position
        rid = "R" + secrets.token_hex(5).upper()
        if rid not in seen:
            seen.add(rid)
            ids.append(rid)
    rows = [(rid, r.job_id, r.cv_id, r.variant, hashlib.sha256(str(r.text).encode("utf-8")).hexdigest())
            for rid, r in zip(ids, candidates.itertuples(index=False))]
    random.SystemRandom().shuffle(rows)
    return pd.DataFrame(rows, columns=list(KEY_COLUMNS))


def load_key(store, candidates: pd.DataFrame) -> tuple[str, pd.DataFrame] | None:
    """(store id, key) of the export of these résumés, or None when they were never exported."""
    from runtime.store import frame_from

    kid = key_id(candidates)
    stored = store.get(kid) if store is not None else None
    return None if stored is None else (kid, frame_from(stored["key"]))
