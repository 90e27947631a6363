"""Resolve a validated spec into the plain, fully explicit dict that is hashed and locked.

Resolution fills every default (thresholds of seed 000 Table 3, k per family), derives the variants
of ``design: one_at_a_time``, and replaces every file reference by its sha256, so that editing a job
description, a score CSV or the model weights after compile changes the spec digest.

The design resolves ``axes``, ``variants`` and ``candidates`` (:mod:`compiler.designs`), each system
its own entry (:mod:`compiler.systems`), each audit family its block (:mod:`compiler.families`).
"""

from __future__ import annotations

from typing import Any

from compiler import onet
from compiler.designs import design_of
from compiler.families import families
from compiler.families.effects import effect_contrasts
from compiler.hashing import digest
from compiler.load import LoadedSpec
from compiler.spec import NON_SEMANTIC_KEYS, TEMPLATE_FAMILIES
from compiler.systems import (DEFAULT_EMBEDDING_NAME, DEFAULT_EMBEDDING_PACKAGE,
                              MSG_NO_DEFAULT_MODEL, file_ref, hook_for, model_fingerprint, model_fingerprints,
                              packaged_model_dir)
from compiler.variants import axis_reference_levels, variant_table

__all__ = [
    "resolve",
    # moved to compiler.systems, compiler.variants and compiler.families.effects; re-exported here
    "DEFAULT_EMBEDDING_NAME", "DEFAULT_EMBEDDING_PACKAGE", "MSG_NO_DEFAULT_MODEL", "packaged_model_dir",
    "model_fingerprint", "model_fingerprints", "axis_reference_levels", "variant_table", "effect_contrasts",
]


def _jobs(ls: LoadedSpec) -> list[dict[str, Any]]:
    jobs = []
    for job in ls.spec.jobs:
        if job.description_file is not None:
            text = {"source": "file", **file_ref(ls.folder, job.description_file)}
        elif job.description is not None:
            text = {"source": "inline", "sha256": digest(job.description)["digest"]}
        else:
            text = None
        if job.onet is not None:  # issue 32: the occupation and the O*NET tables it is written from
            jobs.append({"id": job.id, "title": job.title or onet.title(job.onet), "family": None,
                         "description": text, "onet": onet.provenance(job.onet)})
            continue
        family = job.family or (job.id if job.id in TEMPLATE_FAMILIES else None)
        jobs.append({"id": job.id, "title": job.title or job.id, "family": family, "description": text})
    return jobs


def resolve(ls: LoadedSpec) -> dict[str, Any]:
    """Return the resolved spec: JSON-ready, every default explicit, files replaced by digests.

    Keys named in :data:`compiler.spec.NON_SEMANTIC_KEYS` are left out (they are not hashed).
    """
    spec = ls.spec
    design = design_of(ls)
    resolved = {
        "audit": spec.audit,
        "title": spec.title,
        "seed": spec.seed,
        **design.resolve_matrix(ls),
        "jobs": _jobs(ls),
        "candidates": design.resolve_candidates(ls),
        "systems": [hook_for(s.kind).resolve(s, ls) for s in spec.systems],
        "analysis": {},
        "thresholds": {},
    }
    if spec.source is not None:  # only when written, so that the digests of earlier specs do not change
        resolved["source"] = spec.source.model_dump(mode="json", exclude_none=True)
    if spec.disclosure is not None:  # likewise (issue 34)
        resolved["disclosure"] = spec.disclosure.model_dump(mode="json", by_alias=True, exclude_none=True)
    for family in families():
        family.resolve(ls, resolved)
    assert not set(NON_SEMANTIC_KEYS) & set(resolved)
    return resolved
