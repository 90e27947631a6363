"""Keyword ranker: BM25 (Lucene) or TF-IDF cosine, with a fixed corpus's term statistics (issue 36 §4).

The query is the job's description. The corpus (bundled, or a ``.txt`` in the spec's folder) gives idf,
N and BM25's mean length; a résumé's own text gives its term frequencies and its length, so each score is
a function of the job, the corpus and that résumé alone (no score moves when another résumé joins the pool).

- ``bm25``: for the distinct terms t of the job,

  .. math:: s(d) = \\frac{\\sum_t \\mathrm{idf}(t)\\,\\frac{tf_{t,d}\\,(k_1 + 1)}{tf_{t,d} + k_1 (1 - b + b\\,|d| / \\mathrm{avgdl})}}
                         {(k_1 + 1) \\sum_t \\mathrm{idf}(t)},
     \\qquad \\mathrm{idf}(t) = \\ln\\Bigl(1 + \\frac{N - n_t + 0.5}{n_t + 0.5}\\Bigr)

  (Lucene's idf; ``n_t`` = corpus documents holding t, 0 for a term absent from the corpus; ``|d|`` counts
  all the résumé's terms). The denominator is the sum's bound, so scores lie in [0, 1), never min–max scaled.
- ``tfidf``: scikit-learn's TF-IDF (smooth idf, l2 norm) fitted on the corpus; the cosine of the job's and
  the résumé's vectors, in [0, 1]. Terms outside the corpus's vocabulary are ignored.

Counting is vectorised (numpy and scipy sparse over scikit-learn's counts, each distinct line tokenised once:
:func:`compiler.systems.lexical.term_counts`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from runtime.systems import system
from runtime.systems.base import ScoreRequest, SystemAdapter

MSG_STATS = ("system {id!r}: the corpus's statistics differ from the lock's ({what}: locked {locked}, now {now}); "
             "re-run audit compile")


class LexicalScorer:
    """The scores of one resolved lexical system: the corpus's statistics, then any job against any résumés.

    Parameters
    ----------
    resolved : dict
        The resolved system (:meth:`compiler.systems.lexical.Lexical.resolve`): ``method``, ``tokens``,
        ``bm25``, ``corpus``.
    documents : list of str
        The corpus's documents.
    """

    def __init__(self, resolved: dict[str, Any], documents: list[str]):
        from sklearn.feature_extraction.text import TfidfTransformer

        from compiler.systems.lexical import analyzer, term_counts

        self.resolved = resolved
        self.method: str = resolved["method"]
        self.analyze = analyzer(resolved["tokens"])
        counts, lengths, vocab = term_counts(documents, self.analyze)
        self.n_documents = len(documents)
        self.avgdl = float(lengths.mean()) if len(documents) else 0.0
        self.vocabulary = vocab
        self.column = {t: j for j, t in enumerate(vocab)}
        self.df = np.asarray((counts > 0).sum(axis=0), dtype=np.int64).ravel()
        if self.method == "tfidf":
            # exactly TfidfVectorizer's fit on the corpus (smooth idf, l2 norm), on the same counts
            self.tfidf = TfidfTransformer().fit(counts)
        else:
            p = resolved.get("bm25") or {"k1": 1.5, "b": 0.75}
            self.k1, self.b = float(p["k1"]), float(p["b"])

    def idf(self, terms: list[str]) -> np.ndarray:
        """Lucene's idf of ``terms`` from the corpus: ln(1 + (N - n_t + 0.5) / (n_t + 0.5)), n_t = 0 when absent."""
        n_t = np.array([self.df[self.column[t]] if t in self.column else 0 for t in terms], dtype=np.float64)
        return np.log1p((self.n_documents - n_t + 0.5) / (n_t + 0.5))

    def query_terms(self, job: str) -> list[str]:
        """The job's distinct terms, in order of first occurrence (each counts once)."""
        return list(dict.fromkeys(self.analyze(job)))

    def scores(self, job: str, texts: list[str]) -> np.ndarray:
        """The score of each text against ``job``, shape (len(texts),), float64 in [0, 1] (higher = better match).

        A job without a term (all stop words) scores every text 0.
        """
        from compiler.systems.lexical import term_counts

        if self.method == "tfidf":
            return self._tfidf(job, texts)
        terms = self.query_terms(job)
        if not terms or not texts:
            return np.zeros(len(texts))
        idf = self.idf(terms)
        counts, lengths, _ = term_counts(texts, self.analyze, vocabulary=terms)
        counts = counts.tocoo()
        tf = counts.data.astype(np.float64)
        norm = self.k1 * (1.0 - self.b + self.b * lengths[counts.row] / self.avgdl)
        part = idf[counts.col] * tf * (self.k1 + 1.0) / (tf + norm)
        total = np.bincount(counts.row, weights=part, minlength=len(texts))
        return total / ((self.k1 + 1.0) * idf.sum())

    def _tfidf(self, job: str, texts: list[str]) -> np.ndarray:
        from compiler.systems.lexical import term_counts

        if not texts:
            return np.zeros(0)
        job_counts, _, _ = term_counts([job], self.analyze, vocabulary=self.vocabulary)
        q = np.asarray(self.tfidf.transform(job_counts).toarray(), dtype=np.float64).ravel()  # l2-normalised
        counts, _, _ = term_counts(texts, self.analyze, vocabulary=self.vocabulary)
        # TfidfTransformer.transform's weights (tf x idf, each row l2-normalised), on the CSR arrays in place of
        # a weighted copy of the matrix: cos = sum_t w_t q_t / ||w||
        rows = np.repeat(np.arange(len(texts)), np.diff(counts.indptr))
        w = counts.data * self.tfidf.idf_[counts.indices]
        norm = np.sqrt(np.bincount(rows, weights=w * w, minlength=len(texts)))
        dot = np.bincount(rows, weights=w * q[counts.indices], minlength=len(texts))
        cos = np.divide(dot, norm, out=np.zeros(len(texts)), where=norm > 0)
        return np.clip(cos, 0.0, 1.0)  # non-negative vectors of norm 1 (or 0): rounding only


def scorer(resolved: dict[str, Any], spec_folder: Path) -> LexicalScorer:
    """The :class:`LexicalScorer` of a resolved system, its corpus read from where the lock says.

    Raises
    ------
    compiler.errors.LockError
        The corpus's N or mean length differ from the lock's (exit 3): another tokeniser than the one locked.
    """
    from compiler.errors import LockError
    from compiler.systems.lexical import read_corpus

    c = resolved["corpus"]
    docs = read_corpus("bundled" if c["source"] == "bundled" else c["path"], spec_folder)
    out = LexicalScorer(resolved, docs)
    for what, locked, now in (("documents", c["documents"], out.n_documents), ("avgdl", c["avgdl"], out.avgdl)):
        if locked != now:
            raise LockError(MSG_STATS.format(id=resolved["id"], what=what, locked=locked, now=now))
    return out


@system("lexical")
class LexicalSystem(SystemAdapter):
    """BM25 or TF-IDF cosine against the job's description, with a fixed corpus's statistics (higher = better)."""

    progress_label = "lexical"
    placement = "task"  # a CPU system: one task per batch (issue 40 §3)
    engine: LexicalScorer | None = None

    def setup(self, request: ScoreRequest) -> None:
        """Read the corpus's statistics (once per instance) and check them against the lock.

        Raises
        ------
        ValueError
            No generated résumés.
        compiler.errors.LockError
            The corpus's statistics differ from the lock's (:func:`scorer`).
        """
        super().setup(request)
        if request.resumes is None:
            raise ValueError("the lexical system needs generated resumes (candidates: in the spec)")
        if self.engine is None:
            self.engine = scorer(self.resolved, request.spec_folder)

    def score_batch(self, batch) -> pd.DataFrame:
        """``job_id, cv_id, variant, score, is_true_match`` of one batch: each résumé against the job's text
        (a function of the job, the corpus and that résumé alone, so batching moves no score)."""
        rows = batch.rows
        return pd.DataFrame({
            "job_id": rows["job_id"].to_numpy(),
            "cv_id": rows["cv_id"].to_numpy(),
            "variant": rows["variant"].to_numpy(),
            "score": self.engine.scores(batch.job_text, rows["text"].tolist()),
            "is_true_match": rows["is_true_match"].to_numpy(),
        })

    def finish(self, results) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The batches' scores in the request's row order, and the diagnostics: method, corpus size, mean length,
        per job its terms and those outside the corpus."""
        request, engine = self.request, self.engine
        resumes = request.resumes
        scored = pd.concat([r.frame for r in results], ignore_index=True)
        merged = resumes[["job_id", "cv_id", "variant"]].merge(scored, on=["job_id", "cv_id", "variant"],
                                                               how="left", validate="one_to_one")
        if merged["score"].isna().any():  # a bug: the batches must cover every resume
            raise RuntimeError(f"system {self.id!r}: the batches left resumes unscored")
        jobs = list(dict.fromkeys(resumes["job_id"]))
        info = {
            "method": engine.method, "corpus_documents": engine.n_documents, "avgdl": round(engine.avgdl, 6),
            "job_terms": {j: len(engine.query_terms(request.jobs[j])) for j in jobs},
            "job_terms_outside_corpus": {j: sum(t not in engine.column for t in engine.query_terms(request.jobs[j]))
                                         for j in jobs},
        }
        return merged[["job_id", "cv_id", "variant", "score", "is_true_match"]], info
