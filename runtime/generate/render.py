"""Phase B of seed 000 §3.1.2: write a base candidate with cue texts in fixed slots.

Layout of a rendered resume (plain text, one cue per line, no visible markers)::

    <name>                         \\
    <age>                           | header slot block: the non-empty cues among name, age,
    <residence>                     | residence, in this order, then one blank line
                                   /
    PROFESSIONAL SUMMARY           <- first line of the base body, always
    ...base body (experience, education, skills, certifications)...

    LANGUAGES                      \\  languages slot block, only when the cue is non-empty,
    <languages>                     | always right before ADDITIONAL INFORMATION
                                   /
    ADDITIONAL INFORMATION         <- base body
    <disability>                   <- disability slot, right under the heading
    Availability: ...              <- base body, always starts with "Availability:"
    References available on request.

The base body never writes a line before ``PROFESSIONAL SUMMARY``, never writes a ``LANGUAGES``
heading, and its ADDITIONAL INFORMATION section always starts with an ``Availability:`` line, so
:func:`strip_cue_slots` finds every slot from the layout alone:
``strip_cue_slots(render_resume(base, cues)) == render_resume(base, {})`` for all cues.
"""

from __future__ import annotations

from collections.abc import Mapping

from runtime.generate.base import BaseCandidate

#: The fixed positions a cue can be written to, in layout order.
CUE_SLOTS: tuple[str, ...] = ("name", "age", "residence", "languages", "disability")

SUMMARY_HEADING = "PROFESSIONAL SUMMARY"
EXPERIENCE_HEADING = "EXPERIENCE"
EDUCATION_HEADING = "EDUCATION"
SKILLS_HEADING = "SKILLS"
CERTIFICATIONS_HEADING = "CERTIFICATIONS"
LANGUAGES_HEADING = "LANGUAGES"
ADDITIONAL_HEADING = "ADDITIONAL INFORMATION"
AVAILABILITY_PREFIX = "Availability:"
CLOSING_LINE = "References available on request."
HEADINGS = (
    SUMMARY_HEADING,
    EXPERIENCE_HEADING,
    EDUCATION_HEADING,
    SKILLS_HEADING,
    CERTIFICATIONS_HEADING,
    LANGUAGES_HEADING,
    ADDITIONAL_HEADING,
)

#: Error messages (asserted by tests).
ERR_UNKNOWN_SLOT = "unknown cue slot {slot!r}; allowed: {allowed}"
ERR_CUE_TEXT = "cue for slot {slot!r} must be one line of text that is not a section heading, got {text!r}"
ERR_NOT_RENDERED = "text is not a resume written by render_resume (no {heading!r} line)"


def body_lines(base: BaseCandidate) -> list[str]:
    """Return the identity-neutral base body as lines, without any cue slot."""
    s = base.sections
    lines = [SUMMARY_HEADING, s.summary, "", EXPERIENCE_HEADING]
    for role in s.experience:
        lines += ["", f"{role.title} — {role.employer}, {role.city}", f"{role.start} – {role.end}"]
        lines += [f"- {b}" for b in role.bullets]
    lines += ["", EDUCATION_HEADING, *s.education, ""]
    lines += [
        SKILLS_HEADING,
        f"Tools and technologies: {', '.join(s.tools)}",
        f"Core competencies: {', '.join(s.competencies)}",
        "",
    ]
    if s.certifications:
        lines += [CERTIFICATIONS_HEADING, *(f"- {c}" for c in s.certifications), ""]
    lines += [ADDITIONAL_HEADING, s.availability, CLOSING_LINE]
    return lines


def _cue_text(slot: str, text: object) -> str:
    text = "" if text is None else str(text).strip()
    if not text:
        return ""
    bad = (
        len(text.splitlines()) != 1
        or "\n" in text
        or text in HEADINGS
        or (slot == "disability" and text.startswith(AVAILABILITY_PREFIX))
    )
    if bad:
        raise ValueError(ERR_CUE_TEXT.format(slot=slot, text=text))
    return text


def render_resume(base: BaseCandidate, cues: Mapping[str, str]) -> str:
    """Write ``base`` with the given cue texts in their fixed slots.

    Parameters
    ----------
    base : BaseCandidate
        The identity-neutral resume (Phase A).
    cues : mapping of slot to text
        Keys from :data:`CUE_SLOTS`. A missing slot, ``""`` or ``None`` writes nothing (the other
        slots keep their positions relative to the base body).

    Returns
    -------
    str
        The resume as plain text (no trailing newline). ``render_resume(base, {})`` is the
        identity-neutral base text.

    Raises
    ------
    ValueError
        Unknown slot, or a cue that is not a single line (or would be read as part of the layout).
    """
    for slot in cues:
        if slot not in CUE_SLOTS:
            raise ValueError(ERR_UNKNOWN_SLOT.format(slot=slot, allowed=", ".join(CUE_SLOTS)))
    text = {slot: _cue_text(slot, cues.get(slot, "")) for slot in CUE_SLOTS}
    body = body_lines(base)
    header = [text[s] for s in ("name", "age", "residence") if text[s]]
    out = header + [""] if header else []
    extra = body.index(ADDITIONAL_HEADING)
    out += body[:extra]
    if text["languages"]:
        out += [LANGUAGES_HEADING, text["languages"], ""]
    out.append(ADDITIONAL_HEADING)
    if text["disability"]:
        out.append(text["disability"])
    out += body[extra + 1 :]
    return "\n".join(out)


def base_text(base: BaseCandidate) -> str:
    """The identity-neutral resume of ``base`` (no cue in any slot)."""
    return render_resume(base, {})


def strip_cue_slots(text: str) -> str:
    """Remove every cue slot (and the layout lines that belong to a slot) from a rendered resume.

    ``strip_cue_slots(render_resume(base, cues)) == render_resume(base, {})`` for every ``cues``.

    Raises
    ------
    ValueError
        If ``text`` was not written by :func:`render_resume`.
    """
    lines = text.split("\n")
    for heading in (SUMMARY_HEADING, ADDITIONAL_HEADING):
        if heading not in lines:
            raise ValueError(ERR_NOT_RENDERED.format(heading=heading))
    lines = lines[lines.index(SUMMARY_HEADING) :]
    if LANGUAGES_HEADING in lines:
        j = lines.index(LANGUAGES_HEADING)
        del lines[j : j + 3]
    k = lines.index(ADDITIONAL_HEADING) + 1
    end = k
    while end < len(lines) and not lines[end].startswith(AVAILABILITY_PREFIX):
        end += 1
    del lines[k:end]
    return "\n".join(lines)
