"""Template generator: Phase A base candidates, Phase B cue slots, the job matrix (seed 000 §3.1.2)."""

from __future__ import annotations

import itertools
import re

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.generate import (
    CUE_SLOTS,
    FAMILIES,
    FAMILY_IDS,
    MATRIX_COLUMNS,
    base_text,
    example_axes,
    example_variants,
    generate_base_candidates,
    generate_job_matrix,
    job_family,
    pick_cue,
    render_resume,
    strip_cue_slots,
)
from runtime.generate.base import ERR_K, ERR_M
from runtime.generate.families import ERR_UNKNOWN_FAMILY
from runtime.generate.matrix import ERR_SHARED_SLOT, ERR_UNKNOWN_LEVEL, ERR_VARIANT_AXES
from runtime.generate.render import ERR_CUE_TEXT, ERR_NOT_HEADER, ERR_UNKNOWN_SLOT, LANGUAGES_LABEL

SEED = 20261129
K, M = 8, 3

# Seed 000 Table 2, copied from the paper (§3.2): sex_gender, age_signal, place_of_residence,
# language_signal, disability_signal. BASE is the reference (Male-FR, Young, Close, FR only, No).
TABLE_2 = {
    "BASE": ("Male-FR", "Young", "Close", "FR only", "No"),
    "V01": ("Female-FR", "Older", "Far", "FR+EN", "No"),
    "V02": ("Female-FR", "Young", "Very far", "FR+AR", "Yes"),
    "V03": ("Male-FR", "Older", "Close", "FR+AR", "Yes"),
    "V04": ("Female-NA", "Young", "Far", "FR+AR", "Yes"),
    "V05": ("Male-NA", "Older", "Very far", "FR+EN", "No"),
    "V06": ("Female-FR", "Older", "Close", "FR only", "Yes"),
    "V07": ("Male-FR", "Young", "Far", "FR+EN", "Yes"),
    "V08": ("Female-NA", "Older", "Very far", "FR+AR", "No"),
    "V09": ("Male-FR", "Young", "Close", "FR+EN", "Yes"),
}
AXES = ("sex_gender", "age_signal", "place_of_residence", "language_signal", "disability_signal")


def _matrix(family: str, seed: int = SEED, k: int = K, m: int = M) -> pd.DataFrame:
    return generate_job_matrix(
        job_id=f"job-{family}", family=family, k=k, m=m, seed=seed,
        axes=example_axes(), variants=example_variants(),
    )


@pytest.fixture(scope="module")
def matrices() -> dict[str, pd.DataFrame]:
    return {family: _matrix(family) for family in FAMILY_IDS}


@pytest.fixture(scope="module")
def bases() -> dict[str, list]:
    return {
        family: generate_base_candidates(job_id=f"job-{family}", family=family, k=K, m=M, seed=SEED)
        for family in FAMILY_IDS
    }


# --- Table 2 and the registry ----------------------------------------------------------------------

def test_example_variants_equal_table_2():
    expected = {v: dict(zip(AXES, levels)) for v, levels in TABLE_2.items()}
    assert example_variants() == expected
    assert list(example_variants()) == list(TABLE_2)


def test_example_axes_match_table_1():
    axes = example_axes()
    assert list(axes) == list(AXES)
    assert axes["sex_gender"]["levels"] == ["Male-FR", "Male-NA", "Female-FR", "Female-NA"]
    assert axes["age_signal"]["levels"] == ["Young", "Older"]
    assert axes["place_of_residence"]["levels"] == ["Close", "Far", "Very far"]
    assert axes["language_signal"]["levels"] == ["FR only", "FR+EN", "FR+AR"]
    assert axes["disability_signal"]["levels"] == ["Yes", "No"]
    assert [a["slot"] for a in axes.values()] == list(CUE_SLOTS)
    for axis in axes.values():
        assert set(axis["cues"]) == set(axis["levels"])
    for level, names in axes["sex_gender"]["cues"].items():
        assert len(names) >= 12 and len(set(names)) == len(names), level
    all_names = [n for names in axes["sex_gender"]["cues"].values() for n in names]
    assert len(set(all_names)) == len(all_names)
    assert axes["disability_signal"]["cues"]["No"] == [""]
    for level in ("Young", "Older"):
        assert all(c.startswith("Date of birth: ") for c in axes["age_signal"]["cues"][level])
    # a fresh copy every time
    axes["sex_gender"]["levels"].append("X")
    assert "X" not in example_axes()["sex_gender"]["levels"]


def test_cue_options_are_disjoint_across_levels():
    for axis, spec in example_axes().items():
        seen: dict[str, str] = {}
        for level, options in spec["cues"].items():
            for option in options:
                assert "\n" not in option
                if option:
                    assert seen.setdefault(option, level) == level, (axis, option)


def test_age_cues_young_and_older():
    cues = example_axes()["age_signal"]["cues"]
    ages = {lvl: [int(re.search(r"\(age (\d+)\)", c).group(1)) for c in cues[lvl]] for lvl in cues}
    assert max(ages["Young"]) <= 30 and min(ages["Older"]) >= 55


def test_job_family_registry():
    assert FAMILY_IDS == (
        "data-analyst", "software-developer", "registered-nurse", "accountant", "marketing-specialist",
    )
    fam = job_family("registered-nurse")
    assert fam.title == "Registered Nurse"
    assert fam.description.startswith("# Registered Nurse\n")
    with pytest.raises(KeyError) as info:
        job_family("plumber")
    assert info.value.args[0] == ERR_UNKNOWN_FAMILY.format(
        family="plumber", allowed="accountant, data-analyst, marketing-specialist, registered-nurse, software-developer"
    )


# --- Phase A ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILY_IDS)
def test_exactly_m_matches_and_cv_ids(family, bases):
    cands = bases[family]
    assert [c.cv_id for c in cands] == [f"job-{family}-cv{i:03d}" for i in range(1, K + 1)]
    assert sum(c.is_true_match for c in cands) == M
    assert all(c.family == family and c.job_id == f"job-{family}" for c in cands)
    for c in cands:
        if c.is_true_match:
            assert c.profile_family == family
        else:
            assert c.profile_family != family


@pytest.mark.parametrize(("k", "m"), [(1, 0), (1, 1), (5, 0), (5, 5), (30, 12)])
def test_exactly_m_matches_edge_cases(k, m):
    cands = generate_base_candidates(job_id="j", family="accountant", k=k, m=m, seed=7)
    assert len(cands) == k and sum(c.is_true_match for c in cands) == m


def test_match_positions_follow_the_seed():
    def positions(seed):
        cands = generate_base_candidates(job_id="j", family="data-analyst", k=20, m=10, seed=seed)
        return [c.is_true_match for c in cands]

    assert positions(1) == positions(1)
    assert positions(1) != positions(2)  # a permutation, not "the first M"


def test_base_candidate_does_not_depend_on_k():
    small = generate_base_candidates(job_id="j", family="software-developer", k=3, m=3, seed=5)
    large = generate_base_candidates(job_id="j", family="software-developer", k=9, m=9, seed=5)
    assert small == large[:3]


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_base_content_ranges(family, bases):
    for c in bases[family]:
        s = c.sections
        assert 2 <= len(s.experience) <= 4
        assert all(3 <= len(r.bullets) <= 5 for r in s.experience)
        assert 6 <= len(s.tools) + len(s.competencies) <= 10
        bullets = [b for r in s.experience for b in r.bullets]
        assert len(bullets) == len(set(bullets))
        assert s.experience[0].end == "Present"
        assert 3 <= s.years_experience <= 6  # the postings ask for 2-3 years
        assert f"{s.years_experience} years" in s.summary


@pytest.mark.parametrize(
    ("k", "m", "message"),
    [(0, 0, ERR_K.format(k=0)), (3, 4, ERR_M.format(k=3, m=4)), (3, -1, ERR_M.format(k=3, m=-1))],
)
def test_invalid_k_m(k, m, message):
    with pytest.raises(ValueError) as info:
        generate_base_candidates(job_id="j", family="accountant", k=k, m=m, seed=1)
    assert str(info.value) == message


def test_unknown_family_in_generation():
    with pytest.raises(KeyError, match="unknown job family 'chef'"):
        generate_base_candidates(job_id="j", family="chef", k=2, m=1, seed=1)


# --- determinism -----------------------------------------------------------------------------------

def test_same_seed_same_texts_different_seed_different_texts(matrices):
    again = _matrix("data-analyst")
    pd.testing.assert_frame_equal(again, matrices["data-analyst"])
    other = _matrix("data-analyst", seed=SEED + 1)
    assert list(other["text"]) != list(matrices["data-analyst"]["text"])
    assert (other["text"] != matrices["data-analyst"]["text"]).mean() > 0.9


def test_draws_do_not_use_global_random_state():
    import random

    import numpy as np

    np.random.seed(1)
    random.seed(1)
    a = _matrix("accountant", k=3, m=1)
    np.random.seed(99)
    random.seed(99)
    b = _matrix("accountant", k=3, m=1)
    pd.testing.assert_frame_equal(a, b)


# --- Phase B: slots --------------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILY_IDS)
def test_strip_cue_slots_recovers_the_base(family, matrices, bases):
    frame = matrices[family]
    by_id = {b.cv_id: b for b in bases[family]}
    assert len(frame) == K * len(TABLE_2)
    for row in frame.itertuples():
        neutral = base_text(by_id[row.cv_id])
        assert strip_cue_slots(row.text) == neutral
        assert strip_cue_slots(neutral) == neutral
    base_rows = frame[frame["variant"] == "BASE"].set_index("cv_id")["text"]
    for row in frame.itertuples():
        assert strip_cue_slots(row.text) == strip_cue_slots(base_rows[row.cv_id])


def _cue_line(slot: str, cue: str) -> str:
    """The header line a (non-empty, stripped) cue writes: the languages cue gets its label."""
    if slot == "languages" and not cue.lower().startswith("languages:"):
        return LANGUAGES_LABEL + cue
    return cue


def _header(text: str) -> list[str]:
    """The lines above PROFESSIONAL SUMMARY (the cue slot block and its blank line)."""
    lines = text.split("\n")
    return lines[: lines.index("PROFESSIONAL SUMMARY")]


def test_slot_positions_are_fixed():
    base = generate_base_candidates(job_id="j", family="data-analyst", k=1, m=1, seed=3)[0]
    cues = {"name": "N N", "age": "A", "residence": "R", "languages": "L", "disability": "D"}
    text = render_resume(base, cues)
    lines = text.split("\n")
    assert lines[:7] == ["N N", "A", "R", "Languages: L", "D", "", "PROFESSIONAL SUMMARY"]
    # the body is the base text, unchanged, and has no LANGUAGES section any more
    assert "\n".join(lines[6:]) == base_text(base)
    assert "LANGUAGES" not in lines
    j = lines.index("ADDITIONAL INFORMATION")
    assert lines[j + 1].startswith("Availability:")
    assert lines[j + 2 :] == ["References available on request."]
    # every subset of slots: the non-empty cues in CUE_SLOTS order, one blank line, the base text
    for r in range(len(CUE_SLOTS) + 1):
        for subset in itertools.combinations(CUE_SLOTS, r):
            only = render_resume(base, {slot: cues[slot] for slot in subset})
            expected = [_cue_line(slot, cues[slot]) for slot in subset]
            assert _header(only) == ([*expected, ""] if expected else []), subset
            assert strip_cue_slots(only) == base_text(base)
    # empty and absent slots are the same: no label, no blank line
    assert render_resume(base, {s: "" for s in CUE_SLOTS}) == base_text(base)
    assert render_resume(base, {s: None for s in CUE_SLOTS}) == base_text(base)
    assert render_resume(base, {"languages": "   ", "name": "N N"}).split("\n")[:3] == [
        "N N", "", "PROFESSIONAL SUMMARY"
    ]
    assert base_text(base).split("\n")[0] == "PROFESSIONAL SUMMARY"


def test_languages_label_is_written_once():
    base = generate_base_candidates(job_id="j", family="accountant", k=1, m=1, seed=3)[0]
    for cue, line in [("French (native)", "Languages: French (native)"),
                      ("Languages: French (native)", "Languages: French (native)"),
                      ("languages: French", "languages: French")]:
        assert _header(render_resume(base, {"languages": cue})) == [line, ""]
        assert strip_cue_slots(render_resume(base, {"languages": cue})) == base_text(base)


_ONE_LINE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=40
).filter(lambda t: len(t.strip().splitlines()) <= 1)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cues=st.fixed_dictionaries({slot: _ONE_LINE for slot in CUE_SLOTS}))
def test_strip_inverts_render_for_any_cue_text(cues):
    base = _PROPERTY_BASE
    try:
        text = render_resume(base, cues)
    except ValueError as exc:  # a heading or an "Availability:" disability line is refused
        assert "must be one line" in str(exc)
        return
    assert strip_cue_slots(text) == base_text(base)
    expected = [_cue_line(slot, cues[slot].strip()) for slot in CUE_SLOTS if cues[slot].strip()]
    assert _header(text) == ([*expected, ""] if expected else [])


_PROPERTY_BASE = generate_base_candidates(job_id="p", family="marketing-specialist", k=1, m=0, seed=2)[0]


def test_render_rejects_bad_cues():
    base = generate_base_candidates(job_id="j", family="accountant", k=1, m=1, seed=3)[0]
    with pytest.raises(ValueError) as info:
        render_resume(base, {"photo": "x"})
    assert str(info.value) == ERR_UNKNOWN_SLOT.format(slot="photo", allowed=", ".join(CUE_SLOTS))
    refused = [("name", "two\nlines"), ("age", "a\u2028b"), ("languages", "EXPERIENCE"),
               ("residence", "PROFESSIONAL SUMMARY"), ("disability", "ADDITIONAL INFORMATION"),
               ("disability", "RQTH\r\nyes")]
    for slot, text in refused:
        with pytest.raises(ValueError) as info:
            render_resume(base, {slot: text})
        assert str(info.value) == ERR_CUE_TEXT.format(slot=slot, text=text.strip())
    # the header is above the body, so an "Availability:" disability line no longer collides
    accepted = render_resume(base, {"disability": "Availability: now"})
    assert _header(accepted) == ["Availability: now", ""]
    assert strip_cue_slots(accepted) == base_text(base)
    with pytest.raises(ValueError, match="not a resume written by render_resume"):
        strip_cue_slots("hello")
    # lines above the summary that are not a slot block
    for header in (["x"], ["x", "", ""], ["", "x", ""], ["x", "", "y", ""]):
        with pytest.raises(ValueError) as info:
            strip_cue_slots("\n".join([*header, base_text(base)]))
        assert str(info.value) == ERR_NOT_HEADER.format(heading="PROFESSIONAL SUMMARY")


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_variant_contains_exactly_its_cues(family, matrices):
    axes = example_axes()
    for row in matrices[family].to_dict("records"):
        lines = row["text"].split("\n")
        header = _header(row["text"])
        shown = []
        for axis in AXES:
            level = row[axis]
            slot = axes[axis]["slot"]
            cues = axes[axis]["cues"]
            mine = [_cue_line(slot, o) for o in cues[level] if o]
            if mine:
                assert sum(o in header for o in mine) == 1, (row["variant"], axis)
                shown.append(next(o for o in mine if o in header))
            for other, options in cues.items():
                if other == level:
                    continue
                for option in options:
                    if option:
                        assert _cue_line(slot, option) not in lines, (row["variant"], axis, other, option)
        # the header holds exactly the variant's non-empty cues, in slot order, then a blank line
        assert header == [*shown, ""], row["variant"]
        # names: also no other level's name anywhere in the text (substring)
        for other, names in axes["sex_gender"]["cues"].items():
            if other != row["sex_gender"]:
                assert not any(n in row["text"] for n in names)


def test_female_na_variant_has_a_female_na_name(matrices):
    names = example_axes()["sex_gender"]["cues"]
    for row in matrices["software-developer"].query("variant == 'V08'").itertuples():
        first = row.text.split("\n")[0]
        assert first in names["Female-NA"]
        assert not any(n in row.text for n in names["Male-FR"])


def test_same_level_same_cue_across_variants(matrices):
    frame = matrices["marketing-specialist"]
    for cv_id, group in frame.groupby("cv_id"):
        by_level: dict[str, set] = {}
        for row in group.itertuples():
            by_level.setdefault(row.sex_gender, set()).add(row.text.split("\n")[0])
        assert all(len(v) == 1 for v in by_level.values()), cv_id


def test_pick_cue_is_deterministic_and_labelled():
    options = [f"o{i}" for i in range(50)]
    kw = dict(seed=1, job_id="j", cv_id="j-cv001", axis="sex_gender", level="Male-FR")
    assert pick_cue(options, **kw) == pick_cue(options, **kw)
    picks = {pick_cue(options, **{**kw, "cv_id": f"j-cv{i:03d}"}) for i in range(40)}
    assert len(picks) > 10
    assert pick_cue("only", **kw) == "only"
    with pytest.raises(ValueError, match="no cue options"):
        pick_cue([], **kw)


# --- identity neutrality and match content --------------------------------------------------------

LANGUAGE_WORDS = ("French", "English", "Arabic", "Spanish", "German", "Italian", "native", "mother tongue",
                  "bilingual", "fluent")
IDENTITY_WORDS = ("Date of birth", "RQTH", "disab", "handicap", "Nationality", "citizen", "religio",
                  "married", "km from", "commute", "born", "years old")
# whole words, case-insensitive: pronouns and titles that carry a gender cue, personal details
WHOLE_WORDS = re.compile(
    r"\b(he|she|him|his|her|hers|mr|mrs|ms|miss|man|woman|male|female|photo|address|age)\b", re.I
)


def _identity_leaks(text: str) -> list[str]:
    low = text.lower()
    found = [w for w in LANGUAGE_WORDS + IDENTITY_WORDS if w.lower() in low]
    return found + WHOLE_WORDS.findall(text)


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_base_body_is_identity_neutral(family, bases):
    names = [n for ns in example_axes()["sex_gender"]["cues"].values() for n in ns]
    surnames = {n.split(" ", 1)[1] for n in names}
    for c in bases[family]:
        text = base_text(c)
        assert not any(n in text for n in names)
        assert not any(re.search(rf"\b{re.escape(s)}\b", text) for s in surnames), c.cv_id
        assert not _identity_leaks(text), (c.cv_id, _identity_leaks(text))


def test_base_body_of_many_candidates_is_identity_neutral():
    for family in FAMILY_IDS:
        for c in generate_base_candidates(job_id="x", family=family, k=60, m=30, seed=11):
            assert not _identity_leaks(base_text(c)), (c.cv_id, _identity_leaks(base_text(c)))


def _exclusive_tools(family: str) -> set[str]:
    others = {t.name for f, fam in FAMILIES.items() if f != family for t in fam.tools}
    return {t.name for t in FAMILIES[family].tools} - others


@pytest.mark.parametrize("family", FAMILY_IDS)
def test_matching_and_non_matching_differ_in_family_content(family):
    fam = job_family(family)
    exclusive = _exclusive_tools(family)
    assert len(exclusive) >= 5
    cands = generate_base_candidates(job_id="x", family=family, k=40, m=20, seed=3)
    for c in cands:
        text = base_text(c)
        tools_line = next(ln for ln in text.split("\n") if ln.startswith("Tools and technologies: "))
        tools = set(tools_line.removeprefix("Tools and technologies: ").split(", "))
        titles = {r.title for r in c.sections.experience}
        bullets = {b for r in c.sections.experience for b in r.bullets}
        if c.is_true_match:
            assert tools & exclusive, c.cv_id
            for group in fam.core_tools:  # the job's required tools
                assert tools & set(group), (c.cv_id, group)
            assert titles <= set(fam.all_titles)
            assert bullets <= set(fam.bullets)
            assert c.sections.summary.count(str(c.sections.years_experience)) == 1
        else:
            assert not tools & exclusive, c.cv_id
            assert not titles & set(fam.all_titles)
            assert not bullets & set(fam.bullets)
            assert not any(d in text for lvl in fam.degrees for d in lvl.options)


def test_software_developer_matches_mention_programming():
    cands = generate_base_candidates(job_id="dev", family="software-developer", k=20, m=10, seed=1)
    languages = ("Java", "Python", "JavaScript", "TypeScript", "C#", "Go")
    for c in cands:
        text = base_text(c)
        has = any(re.search(rf"(?<![\w#]){re.escape(lang)}(?![\w#])", text) for lang in languages)
        assert has == bool(c.is_true_match), c.cv_id


# --- the matrix ------------------------------------------------------------------------------------

def test_matrix_shape_and_columns(matrices):
    frame = matrices["data-analyst"]
    assert list(frame.columns) == [*MATRIX_COLUMNS, *AXES]
    assert len(frame) == K * 10
    assert frame.groupby("cv_id")["variant"].apply(list).map(lambda v: v == list(TABLE_2)).all()
    assert frame["is_true_match"].dtype == "int64"
    assert frame.groupby("cv_id")["is_true_match"].nunique().eq(1).all()
    assert frame.drop_duplicates("cv_id")["is_true_match"].sum() == M
    for variant, levels in TABLE_2.items():
        rows = frame[frame["variant"] == variant]
        assert (rows[list(AXES)] == list(levels)).all().all()


def test_matrix_validates_axes_and_variants():
    axes, variants = example_axes(), example_variants()
    kw = dict(job_id="j", family="accountant", k=2, m=1, seed=1)
    bad = {**variants, "V10": {**variants["V01"], "sex_gender": "Other"}}
    with pytest.raises(ValueError) as info:
        generate_job_matrix(axes=axes, variants=bad, **kw)
    assert str(info.value) == ERR_UNKNOWN_LEVEL.format(
        variant="V10", level="Other", axis="sex_gender", allowed=axes["sex_gender"]["levels"]
    )
    missing = {"BASE": {a: lv for a, lv in variants["BASE"].items() if a != "age_signal"}}
    with pytest.raises(ValueError) as info:
        generate_job_matrix(axes=axes, variants=missing, **kw)
    assert str(info.value) == ERR_VARIANT_AXES.format(
        variant="BASE", got=sorted(missing["BASE"]), expected=sorted(axes)
    )
    shared = {**axes, "age_signal": {**axes["age_signal"], "slot": "name"}}
    with pytest.raises(ValueError) as info:
        generate_job_matrix(axes=shared, variants=variants, **kw)
    assert str(info.value) == ERR_SHARED_SLOT.format(first="sex_gender", second="age_signal", slot="name")


def test_matrix_accepts_default_slots_subset_and_reference_entry():
    axes = {a: {k: v for k, v in spec.items() if k != "slot"} for a, spec in example_axes().items()
            if a in ("sex_gender", "disability_signal")}
    variants = {"reference": "BASE", "BASE": {"sex_gender": "Male-FR", "disability_signal": "No"},
                "V01": {"sex_gender": "Female-NA", "disability_signal": "Yes"}}
    frame = generate_job_matrix(job_id="j", family="registered-nurse", k=3, m=2, seed=4,
                                axes=axes, variants=variants)
    assert list(frame.columns) == [*MATRIX_COLUMNS, "sex_gender", "disability_signal"]
    assert list(frame["variant"].unique()) == ["BASE", "V01"]
    base_rows = frame[frame["variant"] == "BASE"]
    assert not base_rows["text"].str.contains("RQTH").any()
    assert frame[frame["variant"] == "V01"]["text"].str.contains("RQTH").all()
    assert not frame["text"].str.contains("Date of birth").any()


def test_matrix_accepts_spec_style_cue_mappings():
    axes = example_axes()
    spec_style = {**axes, "sex_gender": {**axes["sex_gender"],
                                         "cues": {lvl: {"names": names} for lvl, names in axes["sex_gender"]["cues"].items()}}}
    kw = dict(job_id="j", family="accountant", k=3, m=1, seed=9, variants=example_variants())
    pd.testing.assert_frame_equal(generate_job_matrix(axes=spec_style, **kw), generate_job_matrix(axes=axes, **kw))
    broken = {**axes, "age_signal": {**axes["age_signal"], "cues": {"Young": {"a": [], "b": []}, "Older": ["x"]}}}
    with pytest.raises(ValueError, match="cue options must be a list of texts"):
        generate_job_matrix(axes=broken, **kw)
