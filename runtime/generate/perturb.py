"""Negative controls (placebo variants) of the reference résumé (issue 38 §2): changes that signal no
protected characteristic, scored like a variant so that each system's noise floor is measured (the
complement of seed 003's positive control, the validity protocol).

Every perturbation is pure and seeded: it draws only from
``runtime.seeding.rng(seed, "negative_control", job_id, cv_id, control_id)`` and keeps the reference
résumé's cue block (the header slot block of :mod:`runtime.generate.render`, or an LLM résumé's first
paragraph) byte for byte. Template perturbations act on :attr:`BaseCandidate.sections` (``summary_synonyms``,
``date_format``, ``typos``) or on the rendered body below the cue block (``bullet_glyph``,
``section_order``, ``line_breaks``); they never change ``is_true_match``, the years of experience, the
degrees, tools, job titles or employers. The llm design's text-level perturbations (``date_format``,
``bullet_glyph``, ``typos``) act on the text below the cue block (:func:`perturb_text`).

What each does:

``summary_synonyms``
    Replaces the phrases of ``content/synonyms.yaml`` in the professional summary (the first body
    line, inside a sentence encoder's 256-token window) by a drawn alternative; tools, competencies
    and job titles written into the summary are never touched.
``date_format``
    ``Jul 2022`` -> ``07/2022`` in every role's dates (``Present`` stays).
``bullet_glyph``
    The ``- `` of every bullet becomes one drawn glyph (``• ``, ``* ``, ``· ``, ``– ``).
``section_order``
    EDUCATION and SKILLS swapped (an occupation without an EDUCATION section: SKILLS and
    CERTIFICATIONS, when there are certifications).
``typos``
    Two letter swaps (two adjacent inner letters) in two distinct words of the experience bullets;
    never a word of a tool, title, employer, degree or competency, never a capitalised word.
``line_breaks``
    One to three drawn blank lines of the body doubled: whitespace only, so a word-piece tokenizer
    reads the same tokens (a control the encoder does not read; the report labels it so).

Positive controls (issue 39 §6; seed 003 §3.7's positive control as a variant) weaken the reference résumé
for its job instead, so that the validity protocol can test the audit's sensitivity at its own n:
``drop_required_skill`` and ``seniority_down`` (:func:`weaken_sections`, :func:`positive_resume`), drawn from
``rng(seed, "positive_control", job_id, cv_id, control_id)``, the cue block kept byte for byte. They keep the
base candidate's ``is_true_match`` (no new ground truth: the check reads the paired shift of the score).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

import numpy as np

from runtime.generate.base import BaseCandidate
from runtime.generate.content import load
from runtime.generate.render import (CERTIFICATIONS_HEADING, EDUCATION_HEADING, SKILLS_HEADING, SUMMARY_HEADING,
                                     render_resume)
from runtime.generate.resume import MONTHS, ResumeSections
from runtime.seeding import rng

#: Perturbations of the template generator (``compiler.spec.TEMPLATE_PERTURBATIONS``, checked equal by a test).
TEMPLATE_PERTURBATIONS: tuple[str, ...] = ("summary_synonyms", "date_format", "bullet_glyph", "section_order",
                                           "typos", "line_breaks")
#: Text-level perturbations (llm design; ``regenerate`` is the generator's own, not a text edit).
TEXT_PERTURBATIONS: tuple[str, ...] = ("date_format", "bullet_glyph", "typos")
#: Perturbations a word-piece tokenizer cannot see (whitespace only).
INVISIBLE_TO_TOKENIZERS: frozenset[str] = frozenset({"line_breaks"})
#: Glyphs ``bullet_glyph`` draws from.
GLYPHS: tuple[str, ...] = ("• ", "* ", "· ", "– ")
#: Letter swaps ``typos`` makes.
N_TYPOS = 2

ERR_PERTURBATION = "unknown perturbation {name!r}; allowed: {allowed}"
ERR_NO_TYPO = "no word of the bullets can take a typo (cv {cv_id!r}): every word is protected or too short"

_DATE = re.compile(r"\b(" + "|".join(MONTHS) + r") (\d{4})\b")
_WORD = re.compile(r"[A-Za-z]+")
_BULLET = re.compile(r"^(- |• |\* |· |– )")


def draws(seed: int, job_id: str, cv_id: str, control_id: str) -> np.random.Generator:
    """The seeded stream of one placebo résumé: ``rng(seed, "negative_control", job_id, cv_id, control_id)``."""
    return rng(seed, "negative_control", job_id, cv_id, control_id)


def synonyms() -> dict[str, list[str]]:
    """``content/synonyms.yaml``: phrase -> alternatives, longest phrase first (so that ``years of
    experience`` is replaced before ``experience``)."""
    table = load("synonyms.yaml")["synonyms"]
    return {k: list(table[k]) for k in sorted(table, key=lambda k: (-len(k), k))}


def _protected_spans(text: str, texts: list[str]) -> list[tuple[int, int]]:
    """(start, end) of every whole-word, case-insensitive occurrence of ``texts`` in ``text``."""
    return [m.span() for t in texts if t.strip()
            for m in re.finditer(r"(?<![A-Za-z0-9])" + re.escape(t.strip()) + r"(?![A-Za-z0-9])", text, re.IGNORECASE)]


def replace_synonyms(text: str, r: np.random.Generator, protected: list[str] = ()) -> str:
    """Replace every listed phrase of ``text`` (whole words, outside the ``protected`` texts) by an
    alternative drawn from ``r``; phrases in table order, occurrences left to right."""
    spans = _protected_spans(text, list(protected))
    taken: list[tuple[int, int, str]] = []
    for phrase, alternatives in synonyms().items():
        for m in re.finditer(r"(?<![A-Za-z])" + re.escape(phrase) + r"(?![A-Za-z])", text):
            a, b = m.span()
            if any(a < hi and lo < b for lo, hi in spans) or any(a < hi and lo < b for lo, hi, _ in taken):
                continue
            taken.append((a, b, alternatives[int(r.integers(len(alternatives)))]))
    out, pos = [], 0
    for a, b, new in sorted(taken):
        out += [text[pos:a], new]
        pos = b
    return "".join(out) + text[pos:]


def mm_yyyy(text: str) -> str:
    """``Jul 2022`` -> ``07/2022`` wherever a month name is followed by a four-digit year."""
    return _DATE.sub(lambda m: f"{MONTHS.index(m.group(1)) + 1:02d}/{m.group(2)}", text)


def _protected_words(s: ResumeSections) -> set[str]:
    texts = [*s.tools, *s.competencies, *s.education, *s.certifications,
             *(x for role in s.experience for x in (role.title, role.employer, role.city))]
    return {w.lower() for t in texts for w in _WORD.findall(t)}


def _typo_candidates(line: str, protected: set[str]) -> list[tuple[int, int]]:
    """(start, end) of the words of ``line`` that may take a typo: lower-case letters only, at least
    five long, not a protected word, with two different adjacent inner letters."""
    out = []
    for m in _WORD.finditer(line):
        w = m.group()
        if len(w) >= 5 and w.islower() and w not in protected and any(w[i] != w[i + 1] for i in range(1, len(w) - 2)):
            out.append(m.span())
    return out


def _swap(word: str, r: np.random.Generator) -> str:
    """Swap two different adjacent letters, never the first or the last."""
    choices = [i for i in range(1, len(word) - 2) if word[i] != word[i + 1]]
    i = choices[int(r.integers(len(choices)))]
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


def typo_lines(lines: list[str], r: np.random.Generator, protected: set[str], n: int = N_TYPOS) -> list[str]:
    """``lines`` with ``n`` letter swaps in ``n`` distinct words of its bullet lines (``- ...``), drawn from ``r``.

    Raises
    ------
    ValueError
        When fewer than ``n`` words can take a typo.
    """
    pool = [(i, a, b) for i, line in enumerate(lines) if _BULLET.match(line)
            for a, b in _typo_candidates(line, protected)]
    if len(pool) < n:
        raise ValueError(ERR_NO_TYPO.format(cv_id="?"))
    out = list(lines)
    for k in sorted(int(x) for x in r.choice(len(pool), size=n, replace=False))[::-1]:
        i, a, b = pool[k]
        out[i] = out[i][:a] + _swap(out[i][a:b], r) + out[i][b:]
    return out


def perturb_sections(base: BaseCandidate, perturbation: str, r: np.random.Generator) -> BaseCandidate:
    """The base candidate with ``summary_synonyms``, ``date_format`` or ``typos`` applied to its sections
    (any other perturbation: ``base`` itself)."""
    s = base.sections
    if perturbation == "summary_synonyms":
        protected = [*s.tools, *s.competencies, *(c[:1].lower() + c[1:] for c in s.competencies),
                     *(role.title for role in s.experience)]
        s = dataclasses.replace(s, summary=replace_synonyms(s.summary, r, protected))
    elif perturbation == "date_format":
        s = dataclasses.replace(s, experience=tuple(dataclasses.replace(role, start=mm_yyyy(role.start),
                                                                        end=mm_yyyy(role.end))
                                                    for role in s.experience))
    elif perturbation == "typos":
        bullets = [f"- {b}" for role in s.experience for b in role.bullets]
        try:
            swapped = iter(line[2:] for line in typo_lines(bullets, r, _protected_words(s)))
        except ValueError:
            raise ValueError(ERR_NO_TYPO.format(cv_id=base.cv_id)) from None
        s = dataclasses.replace(s, experience=tuple(
            dataclasses.replace(role, bullets=tuple(next(swapped) for _ in role.bullets)) for role in s.experience))
    else:
        return base
    return dataclasses.replace(base, sections=s)


def _block(lines: list[str], heading: str) -> tuple[int, int] | None:
    """(first, stop) of a section: its heading through the blank line that ends it."""
    if heading not in lines:
        return None
    a = lines.index(heading)
    b = lines.index("", a) + 1
    return a, b


def perturb_body(lines: list[str], perturbation: str, r: np.random.Generator) -> list[str]:
    """The body lines (below the cue block) with ``bullet_glyph``, ``section_order`` or ``line_breaks``
    applied (any other perturbation: unchanged)."""
    if perturbation == "bullet_glyph":
        glyph = GLYPHS[int(r.integers(len(GLYPHS)))]
        return [glyph + line[2:] if line.startswith("- ") else line for line in lines]
    if perturbation == "section_order":
        first, second = _block(lines, EDUCATION_HEADING), _block(lines, SKILLS_HEADING)
        if first is None:
            first, second = second, _block(lines, CERTIFICATIONS_HEADING)
        if first is None or second is None:
            return list(lines)
        (a, b), (c, d) = sorted([first, second])
        return [*lines[:a], *lines[c:d], *lines[b:c], *lines[a:b], *lines[d:]]
    if perturbation == "line_breaks":
        blanks = [i for i, line in enumerate(lines) if line == ""]
        chosen = {blanks[int(i)] for i in r.choice(len(blanks), size=min(len(blanks), int(r.integers(1, 4))),
                                                   replace=False)}
        return [x for i, line in enumerate(lines) for x in ([line, ""] if i in chosen else [line])]
    return list(lines)


def placebo_resume(base: BaseCandidate, cues: Mapping[str, str], perturbation: str, *, seed: int,
                   control_id: str) -> str:
    """The placebo résumé of one base candidate: the reference résumé (``base`` with the reference
    variant's ``cues``) under one template perturbation.

    Parameters
    ----------
    base : BaseCandidate
        The identity-neutral base candidate (Phase A).
    cues : mapping of slot to text
        The reference variant's cue texts, as :func:`~runtime.generate.render.render_resume` takes them.
    perturbation : str
        One of :data:`TEMPLATE_PERTURBATIONS`.
    seed : int
        The spec's seed; draws come from :func:`draws` ``(seed, base.job_id, base.cv_id, control_id)``.
    control_id : str
        The negative control's id.

    Returns
    -------
    str
        The placebo résumé; its lines up to ``PROFESSIONAL SUMMARY`` (the cue block) equal the reference
        résumé's byte for byte.

    Raises
    ------
    ValueError
        Unknown perturbation; ``typos`` on a résumé without two words that can take one.
    """
    if perturbation not in TEMPLATE_PERTURBATIONS:
        raise ValueError(ERR_PERTURBATION.format(name=perturbation, allowed=", ".join(TEMPLATE_PERTURBATIONS)))
    r = draws(seed, base.job_id, base.cv_id, control_id)
    lines = render_resume(perturb_sections(base, perturbation, r), cues).split("\n")
    at = lines.index(SUMMARY_HEADING)
    return "\n".join([*lines[:at], *perturb_body(lines[at:], perturbation, r)])


def split_cue_block(text: str) -> tuple[str, str]:
    """(cue block, body) of an LLM résumé: the first paragraph (through the first blank line, where a
    résumé writes the name and personal details) and the rest; ``("", text)`` without a blank line."""
    at = text.find("\n\n")
    return ("", text) if at < 0 else (text[:at + 2], text[at + 2:])


def perturb_text(text: str, perturbation: str, *, seed: int, job_id: str, cv_id: str, control_id: str) -> str:
    """A text-level perturbation (:data:`TEXT_PERTURBATIONS`) of a résumé the tool did not lay out (the
    llm design): applied below the cue block (:func:`split_cue_block`), which is kept byte for byte.
    ``typos`` swaps letters in words of bullet lines only, never in capitalised words.

    Raises
    ------
    ValueError
        Unknown perturbation; ``typos`` on a text without two words of bullet lines that can take one.
    """
    if perturbation not in TEXT_PERTURBATIONS:
        raise ValueError(ERR_PERTURBATION.format(name=perturbation, allowed=", ".join(TEXT_PERTURBATIONS)))
    r = draws(seed, job_id, cv_id, control_id)
    head, body = split_cue_block(text)
    if perturbation == "date_format":
        return head + mm_yyyy(body)
    lines = body.split("\n")
    if perturbation == "bullet_glyph":
        glyph = GLYPHS[int(r.integers(len(GLYPHS)))]
        return head + "\n".join(_BULLET.sub(glyph, line) if _BULLET.match(line) else line for line in lines)
    try:
        return head + "\n".join(typo_lines(lines, r, set()))
    except ValueError:
        raise ValueError(ERR_NO_TYPO.format(cv_id=cv_id)) from None


# --- positive controls (issue 39 §6) ---------------------------------------------------------------------------
#: Perturbations that weaken the reference résumé for its job (``compiler.spec.POSITIVE_PERTURBATIONS``, checked
#: equal by a test): the positive controls of the validity protocol's sensitivity check.
POSITIVE_PERTURBATIONS: tuple[str, ...] = ("drop_required_skill", "seniority_down")
#: What a sentence says in place of a dropped tool (drawn): no named technology.
GENERIC_TOOLS: tuple[str, ...] = ("in-house tools", "standard office software", "general-purpose software")
#: The word an O*NET role title takes under ``seniority_down`` (an occupation's titles have no stages).
JUNIOR = "Junior"
ERR_POSITIVE = "unknown positive-control perturbation {name!r}; allowed: {allowed}"


def positive_draws(seed: int, job_id: str, cv_id: str, control_id: str) -> np.random.Generator:
    """The seeded stream of one positive control's résumé: ``rng(seed, "positive_control", job_id, cv_id,
    control_id)`` (a stream of its own: a negative control of the same id draws another)."""
    return rng(seed, "positive_control", job_id, cv_id, control_id)


def job_required_tools(job_family: str) -> frozenset[str]:
    """The tools a job requires: every tool of a hand-written family's core groups (``core_tools``, of which a
    matching résumé names one each), or every technology of an O*NET occupation (``job_family`` an O*NET-SOC
    code, issue 32: its matching résumés draw their tools from them)."""
    from runtime.generate.families import FAMILIES

    if job_family in FAMILIES:
        return frozenset(t for group in FAMILIES[job_family].core_tools for t in group)
    from runtime.generate.onet import occupation

    return frozenset(occupation(job_family).tools)


def dropped_tool(base: BaseCandidate) -> str | None:
    """The required tool ``drop_required_skill`` takes out of ``base``: the first tool its SKILLS line lists that
    the job requires (:func:`job_required_tools`; the first listed tool is the one its summary names first), or
    None when it lists none (a non-matching résumé, written from another occupation, usually lists none)."""
    required = job_required_tools(base.family)
    return next((t for t in base.sections.tools if t in required), None)


def _whole(text: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9])" + re.escape(text) + r"(?![A-Za-z0-9])")


def _lower_title(title: str, family: str, r: np.random.Generator) -> str:
    """``title`` one career stage down: a hand-written family's junior title is kept (a title listed under two
    stages counts as the lower one), a senior title becomes a drawn mid title, a mid title a drawn junior one,
    never one also listed under the stage left; a title of no stage (an O*NET occupation's) is prefixed with
    ``Junior`` (kept when it starts with it)."""
    from runtime.generate.families import FAMILIES

    fam = FAMILIES.get(family)
    if fam is not None:
        if title in fam.titles["junior"]:
            return title
        for stage, lower in (("mid", "junior"), ("senior", "mid")):
            if title in fam.titles[stage]:
                pool = [t for t in fam.titles[lower] if t not in fam.titles[stage]] or list(fam.titles[lower])
                return pool[int(r.integers(len(pool)))]
    return title if title.startswith(JUNIOR + " ") else f"{JUNIOR} {title}"


def weaken_sections(base: BaseCandidate, perturbation: str, r: np.random.Generator) -> BaseCandidate:
    """The base candidate under a positive-control perturbation (:data:`POSITIVE_PERTURBATIONS`).

    ``drop_required_skill``
        :func:`dropped_tool` leaves the SKILLS line, and every whole-word mention of it in the summary and the
        bullets becomes one drawn phrase of :data:`GENERIC_TOOLS`; a résumé without a required tool is
        returned as it is.
    ``seniority_down``
        Every role's title one career stage down (:func:`_lower_title`, stages of the résumé's own content
        family, ``profile_family``); dates, years, employers, tools and degrees stay, so the cue block and the
        age the dates imply are those of the reference résumé. A résumé whose every title is already a junior
        one is returned as it is.

    Raises
    ------
    ValueError
        Unknown perturbation.
    """
    if perturbation not in POSITIVE_PERTURBATIONS:
        raise ValueError(ERR_POSITIVE.format(name=perturbation, allowed=", ".join(POSITIVE_PERTURBATIONS)))
    s = base.sections
    if perturbation == "drop_required_skill":
        tool = dropped_tool(base)
        if tool is None:
            return base
        generic = GENERIC_TOOLS[int(r.integers(len(GENERIC_TOOLS)))]
        pattern = _whole(tool)
        s = dataclasses.replace(
            s, tools=tuple(t for t in s.tools if t != tool), summary=pattern.sub(generic, s.summary),
            experience=tuple(dataclasses.replace(role, bullets=tuple(pattern.sub(generic, b) for b in role.bullets))
                             for role in s.experience))
    else:
        s = dataclasses.replace(s, experience=tuple(
            dataclasses.replace(role, title=_lower_title(role.title, base.profile_family, r)) for role in s.experience))
    return dataclasses.replace(base, sections=s)


def positive_resume(base: BaseCandidate, cues: Mapping[str, str], perturbation: str, *, seed: int,
                    control_id: str) -> str:
    """The positive control's résumé of one base candidate: the reference résumé (``base`` with the reference
    variant's ``cues``) weakened for its job (issue 39 §6; :func:`weaken_sections`).

    ``is_true_match`` is not re-judged: the control's rows keep the base candidate's label (the check reads the
    paired shift of the score, not a new ground truth). Under ``drop_required_skill`` a résumé that lists none
    of the job's required tools (most non-matching ones) is the reference résumé unchanged, so its difference
    is no signal; the paired test reads the mean over every base candidate.

    Parameters
    ----------
    base, cues, seed, control_id
        As :func:`placebo_resume`; draws come from :func:`positive_draws`.
    perturbation : str
        One of :data:`POSITIVE_PERTURBATIONS`.

    Returns
    -------
    str
        The weakened résumé; its cue block (the lines before ``PROFESSIONAL SUMMARY``) equals the reference
        résumé's byte for byte.

    Raises
    ------
    ValueError
        Unknown perturbation.
    """
    r = positive_draws(seed, base.job_id, base.cv_id, control_id)
    return render_resume(weaken_sections(base, perturbation, r), cues)


def control_resume(base: BaseCandidate, cues: Mapping[str, str], perturbation: str, *, seed: int,
                   control_id: str) -> str:
    """A control résumé of the template design: :func:`positive_resume` for a positive-control perturbation,
    :func:`placebo_resume` otherwise."""
    if perturbation in POSITIVE_PERTURBATIONS:
        return positive_resume(base, cues, perturbation, seed=seed, control_id=control_id)
    return placebo_resume(base, cues, perturbation, seed=seed, control_id=control_id)
