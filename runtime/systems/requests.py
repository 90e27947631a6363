"""What the systems that are sent résumés under opaque ids share (``http``, ``command``, ``python``; issues 35, 36).

- **The request key.** Each résumé is sent under an opaque id (:func:`runtime.blind.new_key`: one per résumé,
  drawn once from the spec's seed and kept in the task store under :func:`request_key_id`, so later runs send the
  same requests; sealed into the run as ``request_key_<system>.csv``). No cv_id, variant or axis level is sent.
- **Request batches.** Items go in the key's shuffled order, ``batch_size`` per request, a request never leaving
  one plan score batch (one job): :meth:`RequestAdapter.items_of`, per plan batch (``score_batch``).
- **Answers.** Every item's reading (valid score, or invalid with its reason and raw answer) is one row of
  ``answers_<system>.csv`` (:data:`ANSWER_COLUMNS`); :meth:`RequestAdapter.scores_of` turns the valid
  scores into the system's scores (a base candidate left unscored is excluded with all its variants and listed).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import pandas as pd

from runtime.systems.base import ScoreRequest, SystemAdapter

#: Columns of ``answers_<system>.csv`` (one row per item and attempt).
ANSWER_COLUMNS = ("system", "job_id", "cv_id", "variant", "resume_id", "attempt", "cached", "valid", "score",
                  "reason", "raw_text")


@dataclass(frozen=True)
class Item:
    """One résumé to score: its opaque id and where it belongs (never sent but ``rid``)."""

    rid: str
    job_id: str
    cv_id: str
    variant: str
    text: str


def request_key_id(resumes: pd.DataFrame, system_id: str, prefix: str = "http-key-") -> str:
    """Store id of a system's request key: ``prefix`` + 20 hex digits of the sha256 over the résumés'
    :func:`runtime.blind.key_id` and the system id."""
    from runtime.blind import key_id

    return prefix + hashlib.sha256(f"{key_id(resumes)}\x1f{system_id}".encode()).hexdigest()[:20]


class RequestAdapter(SystemAdapter):
    """An adapter that sends résumés under opaque ids in request batches (module docstring)."""

    storable = False  # every answer is kept as it arrives: a re-run asks nothing answered

    @property
    def key_prefix(self) -> str:
        """The store id prefix of the system's request key: ``<kind>-key-``."""
        return f"{self.kind}-key-"

    def request_key(self, request: ScoreRequest) -> pd.DataFrame:
        """The system's request key (opaque id per résumé): from the task store, else drawn and kept there."""
        from runtime.blind import key_id, new_key
        from runtime.store import frame_bytes, frame_from

        kid = request_key_id(request.resumes, self.id, self.key_prefix)
        stored = request.store.get(kid) if request.store is not None else None
        if stored is not None:
            return frame_from(stored["key"])
        key = new_key(request.resumes)
        if request.store is not None:
            request.store.put(kid, f"{self.kind}_key", {"key": frame_bytes(key)},
                              key={"resumes": key_id(request.resumes), "system": self.id}, refs=request.plan_tasks)
        return key

    def setup(self, request: ScoreRequest) -> None:
        """The request key (from the task store, else drawn and kept there), sealed into the run
        (``artifacts["request_key_<id>.csv"]``), its store id in ``info``; the answer log of this process starts
        empty.

        Raises
        ------
        ValueError
            The design gives no generated résumés of a paired design.
        """
        super().setup(request)
        resumes = request.resumes
        if resumes is None or not request.paired:
            raise ValueError(f"the {self.kind} system {self.id!r} needs generated résumés of a paired design")
        key = self.request_key(request)
        request.artifacts[f"request_key_{self.id}.csv"] = key.sort_values("resume_id").reset_index(drop=True)
        self.rid_of = {(k.job_id, k.cv_id, k.variant): k.resume_id for k in key.itertuples(index=False)}
        self.order = {rid: n for n, rid in enumerate(key["resume_id"])}
        self.info = request.info.setdefault(self.id, {})
        self.info["request_key"] = request_key_id(resumes, self.id, self.key_prefix)
        self._partial: list[dict[str, Any]] = []

    def items_of(self, batch) -> list[Item]:
        """The items of one batch (:class:`runtime.systems.base.BatchInput`), in the request key's order."""
        items = [Item(self.rid_of[(row.job_id, row.cv_id, row.variant)], row.job_id, row.cv_id, row.variant, row.text)
                 for row in batch.rows.itertuples(index=False)]
        items.sort(key=lambda it: self.order[it.rid])
        return items

    @staticmethod
    def log_records(frames: list[pd.DataFrame]) -> list[dict[str, Any]]:
        """The answer log rows of every batch's frame (as if logged in one list)."""
        return [rec for f in frames for rec in f.to_dict("records")]

    def answers_frame(self, request: ScoreRequest, log: list[dict[str, Any]]) -> pd.DataFrame:
        """``answers_<id>.csv`` from the log rows (sorted by job, cv, variant, attempt), put in the artifacts."""
        answers = pd.DataFrame(log, columns=list(ANSWER_COLUMNS)).sort_values(
            ["job_id", "cv_id", "variant", "attempt"], kind="mergesort").reset_index(drop=True)
        request.artifacts[f"answers_{self.id}.csv"] = answers
        return answers

    def scores_of(self, request: ScoreRequest, answers: pd.DataFrame) -> pd.DataFrame:
        """Scores ``job_id, cv_id, variant, score, is_true_match`` from the valid answers (the LLM screeners'
        aggregation: a base candidate without a valid answer in some cell is excluded with all its variants);
        ``info["answers"]`` counts them."""
        from runtime.systems.llm import aggregate

        responses = answers.assign(condition="default", replicate=0)
        scored, validity = aggregate(responses, request.resumes, system_id=self.id, conditions=["default"],
                                     replicates=1)
        request.info.setdefault(self.id, {})["answers"] = {
            k: validity[0][k] for k in ("answers", "valid", "invalid", "valid_response_rate",
                                        "cells_without_valid_answer", "excluded_base_candidates")}
        return scored.drop(columns=["condition", "replicate"]).reset_index(drop=True)
