"""Embedding matcher: encoder + cosine similarity, seed 000 §3.3 Eq. 1.

s(i, j) = e_i . e_j / (||e_i|| ||e_j||), clipped to [0, 1] before the metrics engine. Each distinct
text (resume or job description) is encoded exactly once, in batches sorted by length, offline.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from runtime.systems import system
from runtime.systems.base import ScoreRequest, SystemAdapter

MSG_MISSING = (
    "the embedding system needs sentence-transformers and torch; install them with "
    "`pip install sentence-transformers torch==2.13.0`"
)
#: Number of encode() calls the texts are split into, for progress reporting.
PROGRESS_CHUNKS = 20


def model_dir(resolved: dict[str, Any], spec_folder: Path) -> Path:
    """Folder of the model named by a resolved embedding system."""
    model = resolved["model"]
    if model["source"] == "package":
        from compiler.resolve import packaged_model_dir

        return packaged_model_dir()
    return (spec_folder / model["path"]).resolve()


def load_model(path: Path):
    """Load a sentence-transformers model from a local folder, never touching the network."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import transformers
        from sentence_transformers import SentenceTransformer
    except ImportError as err:  # pragma: no cover - depends on the install
        raise RuntimeError(MSG_MISSING) from err
    # our own progress bars replace transformers' weight-loading bar and its truncation warning
    # (truncation is measured and reported instead: see EmbeddingSystem.score)
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    return SentenceTransformer(str(path), device="cpu", local_files_only=True)


def encode_texts(model, texts: list[str], *, batch_size: int, advance=None, cache=None) -> np.ndarray:
    """Unit-normalised embeddings, float32, shape (len(texts), dim), in the order given.

    Texts are encoded longest first in ``PROGRESS_CHUNKS`` calls so padding stays small and a progress
    bar can move; the order of the returned rows matches ``texts``. The calls' boundaries depend only
    on the set of texts and ``batch_size``, never on the order of execution: an embedding's bytes
    depend on the texts it is batched with (padding changes the float sums in the last bits), so the
    same texts are always encoded in the same batches. With ``cache`` (``get(texts) -> array or None``
    and ``put(texts, array)``), each call's embeddings are taken from and kept in the task store.
    """
    order = sorted(range(len(texts)), key=lambda i: (-len(texts[i]), i))
    dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    out = np.empty((len(texts), dim()), dtype=np.float32)
    step = max(batch_size, -(-len(order) // PROGRESS_CHUNKS))
    step = -(-step // batch_size) * batch_size
    for start in range(0, len(order), step):
        idx = order[start:start + step]
        chunk = [texts[i] for i in idx]
        emb = cache.get(chunk) if cache is not None else None
        if emb is None:
            emb = model.encode(chunk, batch_size=batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
            if cache is not None:
                cache.put(chunk, emb)
        out[idx] = emb
        if advance:
            advance(len(idx))
    return out


class BatchCache:
    """One encode call's embeddings in the task store, keyed by the model, the batch size and the texts
    in their order (see :func:`encode_texts`)."""

    def __init__(self, store, resolved: dict[str, Any], batch_size: int, system_id: str, refs: list[str]):
        self.store, self.system_id, self.batch_size, self.refs = store, system_id, batch_size, refs
        self.model = {"fingerprint": resolved["fingerprint"], "model_files": resolved.get("model_files")}
        self.encoded = self.reused = 0

    def _key(self, chunk: list[str]):
        import hashlib

        from runtime.store import task_key

        return task_key("encode", model=self.model, batch_size=self.batch_size,
                        texts=[hashlib.sha256(t.encode("utf-8")).hexdigest() for t in chunk])

    def get(self, chunk: list[str]) -> np.ndarray | None:
        tid, _ = self._key(chunk)
        stored = self.store.get(tid)
        if stored is None:
            return None
        import io

        self.reused += len(chunk)
        return np.load(io.BytesIO(stored["embeddings"]), allow_pickle=False)

    def put(self, chunk: list[str], emb: np.ndarray) -> None:
        import io

        from runtime.testhooks import kill_point

        tid, key = self._key(chunk)
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(emb), allow_pickle=False)
        self.store.put(tid, "encode", {"embeddings": buf.getvalue()}, key=key, refs=self.refs)
        self.encoded += len(chunk)
        kill_point(f"encode:{self.system_id}")


@system("embedding")
class EmbeddingSystem(SystemAdapter):
    """Cosine similarity of normalised sentence embeddings, clipped to [0, 1] (higher = better match)."""

    def score(self, request: ScoreRequest) -> pd.DataFrame:
        resumes = request.resumes
        if resumes is None:
            raise ValueError("the embedding system needs generated resumes (candidates: in the spec)")
        model = load_model(model_dir(self.resolved, request.spec_folder))
        job_ids = list(request.jobs)
        texts = list(dict.fromkeys(list(resumes["text"]) + [request.jobs[j] for j in job_ids]))
        index = {t: i for i, t in enumerate(texts)}
        advance = request.progress(f"embedding ({self.id})", len(texts)) if request.progress else None
        cache = (BatchCache(request.store, self.resolved, request.batch_size, self.id, request.plan_tasks)
                 if request.store else None)
        emb = encode_texts(model, texts, batch_size=request.batch_size, advance=advance, cache=cache)
        job_vec = {j: emb[index[request.jobs[j]]].astype(np.float64) for j in job_ids}
        res_vec = emb[[index[t] for t in resumes["text"]]].astype(np.float64)
        jv = np.stack([job_vec[j] for j in resumes["job_id"]])
        cos = np.einsum("ij,ij->i", res_vec, jv)
        tok = model.tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]
        limit = model.max_seq_length
        import torch

        request.info[self.id] = {
            "batch_size": request.batch_size,
            "torch_threads": torch.get_num_threads(),
            "distinct_texts": len(texts),
            "max_seq_length": limit,
            "texts_truncated": int(sum(len(t) > limit for t in tok)),
            "max_tokens": int(max(len(t) for t in tok)),
            "encoded_texts": cache.encoded if cache else len(texts),
            "texts_from_store": cache.reused if cache else 0,
        }
        return pd.DataFrame({
            "job_id": resumes["job_id"].to_numpy(),
            "cv_id": resumes["cv_id"].to_numpy(),
            "variant": resumes["variant"].to_numpy(),
            "score": np.clip(cos, 0.0, 1.0),
            "is_true_match": resumes["is_true_match"].to_numpy(),
        })
