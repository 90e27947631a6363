"""Offline, deterministic template generator of correspondence-audit resumes (seed 000 §3.1.2).

Phase A, :func:`generate_base_candidates`: K identity-neutral base resumes per job, exactly M of
them clearly matching the job. Phase B, :func:`render_resume`: a base resume with one cue text per
fixed slot (:data:`CUE_SLOTS`: name, age, residence, languages, disability), all in the
personal-details header above the body, so that an encoder that truncates at 256 tokens still sees
every cue; :func:`strip_cue_slots` removes them again. :func:`pick_cue` chooses
a level's cue per base candidate; :func:`generate_job_matrix` builds the K x (1+N) matrix of one
job. :func:`example_axes` and :func:`example_variants` are seed 000 Tables 1 and 2. Every random
draw comes from :func:`runtime.seeding.rng`.
"""

from runtime.generate.base import BaseCandidate, ResumeSections, Role, generate_base_candidates
from runtime.generate.cues import DEFAULT_SLOTS, example_axes, example_variants, pick_cue
from runtime.generate.families import FAMILIES, FAMILY_IDS, JobFamily, job_family
from runtime.generate.matrix import MATRIX_COLUMNS, generate_job_matrix
from runtime.generate.render import CUE_SLOTS, base_text, render_resume, strip_cue_slots

__all__ = [
    "BaseCandidate",
    "CUE_SLOTS",
    "DEFAULT_SLOTS",
    "FAMILIES",
    "FAMILY_IDS",
    "JobFamily",
    "MATRIX_COLUMNS",
    "ResumeSections",
    "Role",
    "base_text",
    "example_axes",
    "example_variants",
    "generate_base_candidates",
    "generate_job_matrix",
    "job_family",
    "pick_cue",
    "render_resume",
    "strip_cue_slots",
]
