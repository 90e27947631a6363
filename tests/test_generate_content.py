"""Template generator content: job postings on disk, O*NET facts, no copied O*NET sentences."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from runtime.generate import FAMILIES, FAMILY_IDS, example_axes
from runtime.generate.content import load

ROOT = Path(__file__).resolve().parents[1]
ONET = ROOT.parent / "shared" / "data" / "onet"

needs_onet = pytest.mark.skipif(not ONET.is_dir(), reason="shared/data/onet is not checked out")


def _onet_rows(name: str) -> list[dict[str, str]]:
    with (ONET / name).open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_job_posting_file_matches_registry(family):
    path = ROOT / "specs" / "jobs" / f"{family}.md"
    assert path.read_text(encoding="utf-8") == FAMILIES[family].description


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_job_posting_shape(family):
    fam = FAMILIES[family]
    assert 5 <= len(fam.responsibilities) <= 8
    assert len(fam.required) >= 4 and len(fam.preferred) >= 3
    desc = fam.description
    for heading in ("## Responsibilities", "## Required qualifications", "## Preferred qualifications"):
        assert heading in desc


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_content_pools_are_large_enough(family):
    fam = FAMILIES[family]
    assert len(fam.bullets) >= 20  # 4 roles x 5 bullets, drawn without replacement
    assert len(set(fam.bullets)) == len(fam.bullets)
    assert len(fam.tools) >= fam.n_tools[1] and len(fam.competencies) >= 8
    assert len(fam.employers) >= 4 and len(fam.institutions) >= 2
    assert abs(sum(d.weight for d in fam.degrees) - 1) < 1e-9
    for stage in ("junior", "mid", "senior"):
        assert fam.titles[stage]
    for template in fam.summaries:
        template.format(years=5, tool_a="a", tool_b="b", comp_a="c", comp_b="d")


def test_families_do_not_share_titles_or_bullets():
    seen: dict[str, str] = {}
    for family, fam in FAMILIES.items():
        for item in [*fam.all_titles, *fam.bullets]:
            assert seen.setdefault(item, family) == family, item


def test_non_match_donors_are_distant_families():
    donors = load("common.yaml")["non_match_donors"]
    assert set(donors) == set(FAMILY_IDS)
    for family, others in donors.items():
        assert others and family not in others and set(others) <= set(FAMILY_IDS)
        degrees = {d for lvl in FAMILIES[family].degrees for d in lvl.options}
        for other in others:
            # a non-matching resume never holds one of the job's degrees
            assert not degrees & {d for lvl in FAMILIES[other].degrees for d in lvl.options}, other


@needs_onet
@pytest.mark.parametrize("family", FAMILY_IDS)
def test_tools_are_onet_technology_examples(family):
    fam = FAMILIES[family]
    examples = {r["Example"] for r in _onet_rows("technology_skills.csv") if r["O*NET-SOC Code"] in fam.onet_codes}
    missing = [t.onet for t in fam.tools if t.onet not in examples]
    assert not missing


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _shingles(text: str, n: int = 7) -> set[tuple[str, ...]]:
    words = _words(text)
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


@needs_onet
def test_no_onet_task_sentence_is_copied():
    tasks: set[tuple[str, ...]] = set()
    for row in _onet_rows("task_statements.csv"):
        tasks |= _shingles(row["Task"])
    for row in _onet_rows("occupation_data.csv"):
        tasks |= _shingles(row["Description"])
    for family, fam in FAMILIES.items():
        texts = [fam.description, *fam.summaries, *fam.bullets]
        copied = [t for t in texts if _shingles(t) & tasks]
        assert not copied, (family, copied)


def test_cue_lists_do_not_appear_in_content():
    names = [n for ns in example_axes()["sex_gender"]["cues"].values() for n in ns]
    content = " ".join(
        " ".join([*f.employers, *f.institutions, *f.bullets, *f.summaries]) for f in FAMILIES.values()
    )
    assert not any(n in content for n in names)


def test_compiler_lists_agree_with_the_generator():
    from compiler.spec import CUE_SLOTS as SPEC_SLOTS
    from compiler.spec import TEMPLATE_FAMILIES

    from runtime.generate import CUE_SLOTS

    assert SPEC_SLOTS == CUE_SLOTS
    assert TEMPLATE_FAMILIES == FAMILY_IDS
