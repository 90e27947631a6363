"""Phase B of seed 000 §3.1.2: write a base candidate with cue texts in fixed slots.

Layout of a rendered resume (plain text, one cue per line, no visible markers)::

    <name>                         \\
    <age>                           | header slot block (the personal details of a French CV): the
    <residence>                     | non-empty cues among name, age, residence, languages and
    Languages: <languages>          | disability, in this order, then one blank line; the languages
    <disability>                    | cue is written after a "Languages: " label
                                   /
    PROFESSIONAL SUMMARY           <- first line of the base body, always
    ...base body (experience, education, skills, certifications)...
    ADDITIONAL INFORMATION         <- base body
    Availability: ...
    References available on request.

Why every cue sits in the header: the systems under audit read the resume as a sequence of tokens,
and a sentence encoder truncates it (all-MiniLM-L6-v2 keeps the first 256 word-piece tokens; a
rendered resume of the example audit is about 280-620 tokens long). A cue written after the cut is
invisible to the encoder, so an axis written there would get score differences of exactly 0 and
the audit would be blind to it.

With the cues first, the whole cue block ends within the first 120 tokens for every family and
every cue option of seed 000 Table 1 (at most 54 with the longest options, [CLS] included;
``tests/test_generate_tokens.py`` checks this against the model's own tokenizer).

The base body never writes a line before ``PROFESSIONAL SUMMARY`` and a cue is never a section
heading, so :func:`strip_cue_slots` finds the slot block from the layout alone:
``strip_cue_slots(render_resume(base, cues)) == render_resume(base, {})`` for all cues.
"""

from __future__ import annotations

from collections.abc import Mapping

# CUE_SLOTS (the fixed positions a cue is written to, in layout order, all in the header) is defined
# once, by the spec models, so the spec's ``slot`` choices and this layout cannot drift apart.
from compiler.spec import CUE_SLOTS
from runtime.generate.base import BaseCandidate

SUMMARY_HEADING = "PROFESSIONAL SUMMARY"
EXPERIENCE_HEADING = "EXPERIENCE"
EDUCATION_HEADING = "EDUCATION"
SKILLS_HEADING = "SKILLS"
CERTIFICATIONS_HEADING = "CERTIFICATIONS"
ADDITIONAL_HEADING = "ADDITIONAL INFORMATION"
CLOSING_LINE = "References available on request."
HEADINGS = (
    SUMMARY_HEADING,
    EXPERIENCE_HEADING,
    EDUCATION_HEADING,
    SKILLS_HEADING,
    CERTIFICATIONS_HEADING,
    ADDITIONAL_HEADING,
)
#: Label written before the ``languages`` cue in the header (unless the cue already starts with it).
LANGUAGES_LABEL = "Languages: "

#: Error messages (asserted by tests).
ERR_UNKNOWN_SLOT = "unknown cue slot {slot!r}; allowed: {allowed}"
ERR_CUE_TEXT = "cue for slot {slot!r} must be one line of text that is not a section heading, got {text!r}"
ERR_NOT_RENDERED = "text is not a resume written by render_resume (no {heading!r} line)"
ERR_NOT_HEADER = (
    "text is not a resume written by render_resume (the lines before {heading!r} are not a cue "
    "slot block: non-empty lines, then one blank line)"
)


def body_lines(base: BaseCandidate) -> list[str]:
    """Return the identity-neutral base body as lines, without any cue slot."""
    s = base.sections
    lines = [SUMMARY_HEADING, s.summary, "", EXPERIENCE_HEADING]
    for role in s.experience:
        lines += ["", f"{role.title} — {role.employer}, {role.city}", f"{role.start} – {role.end}"]
        lines += [f"- {b}" for b in role.bullets]
    lines += [""]
    if s.education:  # an O*NET occupation's zone may write no EDUCATION section (issue 32 §1)
        lines += [EDUCATION_HEADING, *s.education, ""]
    lines += [SKILLS_HEADING]
    if s.tools:
        lines += [f"Tools and technologies: {', '.join(s.tools)}"]
    lines += [f"Core competencies: {', '.join(s.competencies)}", ""]
    if s.certifications:
        lines += [CERTIFICATIONS_HEADING, *(f"- {c}" for c in s.certifications), ""]
    lines += [ADDITIONAL_HEADING, s.availability, CLOSING_LINE]
    return lines


def _cue_text(slot: str, text: object) -> str:
    """The line a cue writes in the header ("" for an empty cue).

    A cue must be one line (any line separator :meth:`str.splitlines` knows is refused) and not a
    section heading, so that the header can never be read as part of the base body.
    """
    text = "" if text is None else str(text).strip()
    if not text:
        return ""
    if len(text.splitlines()) != 1 or "\n" in text or text in HEADINGS:
        raise ValueError(ERR_CUE_TEXT.format(slot=slot, text=text))
    if slot == "languages" and not text.lower().startswith(LANGUAGES_LABEL.strip().lower()):
        text = LANGUAGES_LABEL + text
    return text


def _header_lines(cues: Mapping[str, str]) -> list[str]:
    """The header slot block of ``cues`` as lines: one line per non-empty cue, in the order of
    :data:`CUE_SLOTS`, then one blank line; no line at all when every cue is empty.

    Raises
    ------
    ValueError
        Unknown slot, or a cue that is not a single line or is a section heading.
    """
    for slot in cues:
        if slot not in CUE_SLOTS:
            raise ValueError(ERR_UNKNOWN_SLOT.format(slot=slot, allowed=", ".join(CUE_SLOTS)))
    lines = [line for line in (_cue_text(slot, cues.get(slot, "")) for slot in CUE_SLOTS) if line]
    return [*lines, ""] if lines else []


def render_resume(base: BaseCandidate, cues: Mapping[str, str]) -> str:
    """Write ``base`` with the given cue texts in their fixed slots (seed 000 §3.1.2, Phase B).

    Every slot is in the header, above ``PROFESSIONAL SUMMARY``, in the order name, age, residence,
    languages, disability (see the module docstring for the layout and for why: an encoder that
    truncates at 256 tokens must still see every cue).

    Parameters
    ----------
    base : BaseCandidate
        The identity-neutral resume (Phase A).
    cues : mapping of slot to text
        Keys from :data:`CUE_SLOTS`. A missing slot, ``""`` or ``None`` writes nothing (no line, no
        label); the other cues keep their order. The ``languages`` cue is written after a
        ``"Languages: "`` label unless it already starts with ``"Languages:"`` (any case).

    Returns
    -------
    str
        The resume as plain text (no trailing newline). ``render_resume(base, {})`` is the
        identity-neutral base text, which starts with ``PROFESSIONAL SUMMARY``.

    Raises
    ------
    ValueError
        Unknown slot, or a cue that is not a single line or is a section heading.
    """
    return "\n".join([*_header_lines(cues), *body_lines(base)])


def base_text(base: BaseCandidate) -> str:
    """The identity-neutral resume of ``base`` (no cue in any slot)."""
    return render_resume(base, {})


def strip_cue_slots(text: str) -> str:
    """Remove the header slot block (every cue, its label and the blank line after the block) from
    a rendered resume.

    ``strip_cue_slots(render_resume(base, cues)) == render_resume(base, {})`` for every ``cues``.

    Raises
    ------
    ValueError
        If ``text`` was not written by :func:`render_resume`: no ``PROFESSIONAL SUMMARY`` or
        ``ADDITIONAL INFORMATION`` line, or lines before ``PROFESSIONAL SUMMARY`` that are not a
        slot block (non-empty lines followed by exactly one blank line).
    """
    lines = text.split("\n")
    for heading in (SUMMARY_HEADING, ADDITIONAL_HEADING):
        if heading not in lines:
            raise ValueError(ERR_NOT_RENDERED.format(heading=heading))
    start = lines.index(SUMMARY_HEADING)
    header = lines[:start]
    if header and (header[-1] != "" or not all(header[:-1])):
        raise ValueError(ERR_NOT_HEADER.format(heading=SUMMARY_HEADING))
    return "\n".join(lines[start:])
