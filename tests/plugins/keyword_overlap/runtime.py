"""Runtime halves of the ``keyword_overlap`` plug-in: the system adapter and the audit family."""

from __future__ import annotations

import numpy as np
import pandas as pd

from runtime.families import AuditFamily, FamilyResult, family
from runtime.systems import system
from runtime.systems.base import BatchInput, BatchResult, SystemAdapter

from keyword_overlap import ID, RULE, overlap

INCONCLUSIVE, VALID = "INCONCLUSIVE", "VALID"
#: The family's document in the run folder (listed in run.json ``artifacts``, hashed by the manifest).
DOCUMENT = "keyword_overlap.md"
MSG_LOW_SPREAD = ("system {system!r}: score SD {sd:.3g} is below min_spread {min_spread:g} (n = {n}, scores mapped "
                  "to [0, 1] by the score range): too little spread to separate candidates, so a difference between "
                  "variants could hardly show")
MSG_TOO_FEW = "system {system!r}: {n} score(s), too few for a standard deviation"


@system(ID)
class KeywordOverlapAdapter(SystemAdapter):
    """Scores every résumé handed to it: each (job, cv, variant) cell of a correspondence audit, or each
    population profile (variant ``population``), with :func:`keyword_overlap.overlap`."""

    def score_batch(self, batch: BatchInput) -> pd.DataFrame:
        """``job_id, cv_id, variant, score, is_true_match`` of one plan batch (the per-batch contract, issue 40)."""
        rows = batch.rows
        if rows is None:  # validate refuses it first (a text-scoring kind needs a generator)
            raise ValueError(f"system {self.id!r} needs the résumés the tool writes (candidates: in the spec)")
        scores = [overlap(batch.job_text or "", text) for text in rows["text"]]
        return pd.DataFrame({"job_id": rows["job_id"].to_numpy(), "cv_id": rows["cv_id"].to_numpy(),
                             "variant": rows["variant"].to_numpy(), "score": np.asarray(scores, dtype=float),
                             "is_true_match": rows["is_true_match"].to_numpy()})

    def finish(self, results: list[BatchResult]) -> tuple[pd.DataFrame, dict]:
        """The batches' rows in the request's row order, and what the report's system table shows."""
        request = self.request
        keys = ["job_id", "cv_id", "variant"]
        scored = pd.concat([r.frame for r in results], ignore_index=True)
        frame = request.resumes[keys].merge(scored, on=keys, how="left", validate="one_to_one")
        return frame, {"rule": RULE, "scored": len(frame), "paired": request.paired}


def spread(frame: pd.DataFrame, ranges: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """Per system: n, mean and SD (ddof = 1) of its scores mapped to [0, 1] by its score range.

    Replicates are averaged first, so ``n`` counts the scored cells: base candidate x variant (x prompt
    condition) of a paired frame, profile (x condition) of unpaired scores.
    """
    keys = [c for c in ("system", "condition", "job_id", "cv_id", "variant") if c in frame.columns]
    cells = frame.groupby(keys, sort=False)["score"].mean().reset_index()
    rows = []
    for sid, g in cells.groupby("system", sort=False):
        lo, hi = ranges[sid]
        s = (g["score"].to_numpy(float) - lo) / (hi - lo)
        rows.append({"system": sid, "n": int(len(s)), "mean": float(np.mean(s)),
                     "sd": float(np.std(s, ddof=1)) if len(s) > 1 else float("nan")})
    return pd.DataFrame(rows, columns=["system", "n", "mean", "sd"])


def document(table: pd.DataFrame, min_spread: float, verdict: str, design: str) -> bytes:
    """``keyword_overlap.md``: the verdict, then n, mean and SD per system, and the scoring rule."""
    lines = ["# Keyword overlap: spread of the scores", "",
             f"Verdict: **{verdict}** (every system's score SD must reach min_spread = {min_spread:g}; "
             f"scores mapped to [0, 1] by each system's score range; {design}).", "",
             "| system | n | mean | SD | status |", "|---|---:|---:|---:|---|"]
    for r in table.itertuples(index=False):
        ok = bool(r.sd >= min_spread)
        lines.append(f"| {r.system} | {r.n} | {r.mean:.4f} | {r.sd:.4f} | {'ok' if ok else 'below min_spread'} |")
    lines += ["", f"Scoring rule of `kind: keyword_overlap` systems: {RULE}.", ""]
    return "\n".join(lines).encode("utf-8")


@family(ID)
class KeywordOverlapFamily(AuditFamily):
    """The spread of every system's scores (``analysis.keyword_overlap.min_spread``): VALID when each
    system's SD reaches it, else INCONCLUSIVE with one failed check per system below it. Reads the
    paired frame of a correspondence audit, or the scores of a population design."""

    title = "keyword overlap"

    def analyse(self, ctx) -> FamilyResult:
        min_spread = float(ctx.resolved["analysis"][ID]["min_spread"])
        paired = ctx.paired is not None
        table = spread(ctx.paired if paired else ctx.scores, ctx.score_range())
        failed = []
        for r in table.itertuples(index=False):
            if r.n < 2:
                failed.append(MSG_TOO_FEW.format(system=r.system, n=r.n))
            elif r.sd < min_spread:
                failed.append(MSG_LOW_SPREAD.format(system=r.system, sd=r.sd, min_spread=min_spread, n=r.n))
        verdict = INCONCLUSIVE if failed else VALID
        design = "paired candidates, one score per base candidate and variant" if paired else \
            "unpaired profiles, one score per profile"
        below = sum(1 for r in table.itertuples(index=False) if not r.sd >= min_spread)
        summary = [f"keyword overlap: {verdict} ({below} of {len(table)} system(s) below min_spread {min_spread:g}; "
                   f"see {DOCUMENT})"]
        return FamilyResult(verdict=verdict, failed=failed, summary=summary,
                            documents={DOCUMENT: document(table, min_spread, verdict, design)})
