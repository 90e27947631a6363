"""Embedding matcher: encoder + cosine similarity, seed 000 §3.3 Eq. 1.

s(i, j) = e_i . e_j / (||e_i|| ||e_j||), clipped to [0, 1] before the metrics engine. The resumes are
encoded per score batch of the plan (whole base candidates with all their variants, one encoder call
each), every job description alone; offline.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from runtime.systems import system
from runtime.systems.base import ScoreRequest, SystemAdapter

MSG_MISSING = "the embedding matcher needs the embedding extra: pip install 'audit-compiler[embedding]'"


def model_dir(resolved: dict[str, Any], spec_folder: Path) -> Path:
    """Folder of the model named by a resolved embedding system."""
    model = resolved["model"]
    if model["source"] == "package":
        from compiler.systems import packaged_model_dir

        return packaged_model_dir()
    return (spec_folder / model["path"]).resolve()


def load_model(path: Path):
    """Load a sentence-transformers model from a local folder, never touching the network."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import transformers
        from sentence_transformers import SentenceTransformer
    except ImportError as err:  # pragma: no cover - execute checks the extra first (compiler.extras.check_extras)
        from compiler.systems import MissingModule

        raise MissingModule(MSG_MISSING) from err
    # our own progress bars replace transformers' weight-loading bar and its truncation warning
    # (truncation is measured and reported instead: see EmbeddingSystem.finish)
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    return SentenceTransformer(str(path), device="cpu", local_files_only=True)


def encode_batch(model, texts: list[str]) -> np.ndarray:
    """Unit-normalised embeddings of one plan batch, float32, shape (len(texts), dim), in the order given.

    The texts are encoded in **one** encoder call (``batch_size = len(texts)``): an embedding's bytes
    depend on the texts it is padded with, so the plan fixes each batch (:func:`compiler.plan.score_batches`)
    and no execution setting may split it (methods version 2).
    """
    return model.encode(texts, batch_size=max(1, len(texts)), normalize_embeddings=True,
                        convert_to_numpy=True, show_progress_bar=False)


def sections_past_window(tokenizer, texts: list[str], headings: tuple[str, ...] | list[str],
                         max_seq_length: int) -> dict[str, float]:
    """Per section heading, the share of ``texts`` the encoder never reads from that heading on (issue 31 §5).

    The encoder keeps the first ``max_seq_length`` tokens, [CLS] and [SEP] included, so the content
    tokens at index ``max_seq_length - 2`` or later (counted without special tokens) are cut. A heading
    starts past the window in a text when its first token (the first token starting at or after the
    heading's line, found by the tokenizer's character offsets) lies at that index or later.

    Parameters
    ----------
    tokenizer : transformers fast tokenizer
        The encoder's own (``SentenceTransformer.tokenizer``; it must return offsets).
    texts : list of str
        The distinct résumé texts (the denominator).
    headings : sequence of str
        Section headings, each matched as a whole line (:attr:`ScoreRequest.headings`).
    max_seq_length : int
        The encoder's window in tokens (all-MiniLM-L6-v2: 256).

    Returns
    -------
    dict of str to float
        Heading -> share of ``texts`` in [0, 1] (6 decimals) in which it starts past the window; a text
        without the heading counts as not past. Empty without texts or headings. Lower is better: the
        sections past the window do not move the score.
    """
    import re
    from bisect import bisect_left

    if not texts or not headings:
        return {}
    enc = tokenizer(list(texts), add_special_tokens=False, truncation=False, return_offsets_mapping=True)
    past = dict.fromkeys(headings, 0)
    cut = max_seq_length - 2
    for text, offsets in zip(texts, enc["offset_mapping"]):
        starts = [a for a, _ in offsets]
        for h in headings:
            m = re.search(rf"^{re.escape(h)}[ \t]*$", text, flags=re.MULTILINE)
            if m is not None and bisect_left(starts, m.start()) >= cut:
                past[h] += 1
    return {h: round(past[h] / len(texts), 6) for h in headings}


@system("embedding")
class EmbeddingSystem(SystemAdapter):
    """Cosine similarity of normalised sentence embeddings, clipped to [0, 1] (higher = better match)."""

    def window(self, texts: list[str], spec_folder: Path) -> list[tuple[int, ...]]:
        """The first ``max_seq_length`` token ids of each text ([CLS] included), read with the model's own
        tokenizer (``sentence_bert_config.json``), as the encoder truncates them."""
        import json

        from transformers import AutoTokenizer

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        path = model_dir(self.resolved, spec_folder)
        limit = int(json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"])
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        ids = tok(list(texts), add_special_tokens=True, truncation=True, max_length=limit)["input_ids"]
        return [tuple(x) for x in ids]

    batch_output = "cosine"
    placement = "actor"  # the model loads once per worker process (issue 40 §3)
    progress_label = "embedding"
    model: Any = None

    def setup(self, request: ScoreRequest) -> None:
        """Check the request, pin torch's threads (``request.torch_threads``, when given) and load the model
        (once per instance: a second setup reuses it).

        Raises
        ------
        ValueError
            No generated résumés, or no plan batches (a bug: the pipeline always passes them).
        """
        super().setup(request)
        if request.resumes is None:
            raise ValueError("the embedding system needs generated resumes (candidates: in the spec)")
        if not request.batches:  # a bug: the pipeline always passes the plan's batches
            raise ValueError("the embedding system needs ScoreRequest.batches (the plan's score batches)")
        import torch

        if request.torch_threads is not None:
            torch.set_num_threads(int(request.torch_threads))
        self.torch_threads = torch.get_num_threads()
        if self.model is None:
            self.model = load_model(model_dir(self.resolved, request.spec_folder))
            self._job_vec: dict[str, np.ndarray] = {}

    def job_vector(self, text: str) -> np.ndarray:
        """A job description's unit embedding, float64, encoded alone in its own encoder call (kept per text)."""
        if text not in self._job_vec:
            self._job_vec[text] = encode_batch(self.model, [text])[0].astype(np.float64)
        return self._job_vec[text]

    def score_batch(self, batch) -> pd.DataFrame:
        """``job_id, cv_id, variant, cosine`` of one plan batch: its distinct texts (longest first) in one
        encoder call, each against the job's description (encoded alone)."""
        rows = batch.rows
        job = self.job_vector(batch.job_text)
        texts = sorted(dict.fromkeys(rows["text"]), key=lambda t: -len(t))
        emb = encode_batch(self.model, texts)
        index = {t: i for i, t in enumerate(texts)}
        vec = emb[[index[t] for t in rows["text"]]].astype(np.float64)
        return pd.DataFrame({"job_id": rows["job_id"].to_numpy(), "cv_id": rows["cv_id"].to_numpy(),
                             "variant": rows["variant"].to_numpy(), "cosine": vec @ job})

    def finish(self, results) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Clipped cosines of every résumé in the request's row order, and the diagnostics: batches, torch
        threads, distinct texts, the window (``max_seq_length``), texts truncated, the longest text in tokens,
        texts encoded in this run, résumés taken from the task store, and the sections past the window."""
        request = self.request
        resumes = request.resumes
        cos = pd.concat([r.frame for r in results], ignore_index=True)
        merged = resumes[["job_id", "cv_id", "variant", "is_true_match"]].merge(
            cos, on=["job_id", "cv_id", "variant"], how="left", validate="one_to_one")
        if merged["cosine"].isna().any():  # a bug: the batches must cover every resume
            raise RuntimeError(f"system {self.id!r}: the plan's score batches left resumes unscored")
        model = self.model
        texts = list(dict.fromkeys(list(resumes["text"]) + [request.jobs[j] for j in request.jobs]))
        tok = model.tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]
        limit = model.max_seq_length
        resume_texts = list(dict.fromkeys(resumes["text"]))  # the denominator of sections_past_window
        info: dict[str, Any] = {
            "score_batches": len(request.batches),
            "torch_threads": self.torch_threads,
            "distinct_texts": len(texts),
            "max_seq_length": limit,
            "texts_truncated": int(sum(len(t) > limit for t in tok)),
            "max_tokens": int(max(len(t) for t in tok)),
            "encoded_texts": int(sum(r.batch.rows["text"].nunique() for r in results if not r.stored)),
            "resumes_from_store": int(sum(len(r.batch.rows) for r in results if r.stored)),
        }
        if request.headings:
            info["sections_past_window"] = sections_past_window(model.tokenizer, resume_texts, request.headings, limit)
        return pd.DataFrame({
            "job_id": merged["job_id"].to_numpy(),
            "cv_id": merged["cv_id"].to_numpy(),
            "variant": merged["variant"].to_numpy(),
            "score": np.clip(merged["cosine"].to_numpy(dtype=float), 0.0, 1.0),
            "is_true_match": merged["is_true_match"].to_numpy(),
        }), info
