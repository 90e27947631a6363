"""Registry of the job families the template generator can write resumes and job postings for.

Each family bundles a company-neutral job posting (rendered as Markdown by
:attr:`JobFamily.description`; ``specs/jobs/<family>.md`` holds the same text) and the content
pools a base candidate of that family is drawn from (seed 000 §3.1.2, Phase A). The content lives
in ``runtime/generate/content/*.yaml``; see its README for what is an O*NET fact and what is
written for this project.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from runtime.generate.content import FAMILY_FILES, load

#: Error message of :func:`job_family` for an unknown family (``KeyError``).
ERR_UNKNOWN_FAMILY = "unknown job family {family!r}; allowed: {allowed}"


@dataclass(frozen=True)
class Tool:
    """A technology named in resumes: ``name`` as written, ``onet`` the O*NET example it stands for."""

    name: str
    onet: str


@dataclass(frozen=True)
class DegreeLevel:
    """One education level of a family with its sampling weight and the degrees written for it."""

    level: str
    weight: float
    options: tuple[str, ...]


@dataclass(frozen=True)
class JobFamily:
    """One job family: the job posting and the content pools of its resumes.

    Attributes
    ----------
    id : str
        Family id (``data-analyst``, ...), the ``family`` of a spec's job.
    title : str
        Job title of the posting.
    onet_codes : tuple of str
        O*NET-SOC codes whose facts the content uses.
    summary, responsibilities, required, preferred
        The job posting.
    summaries : tuple of str
        Resume summary templates (placeholders ``{years}``, ``{tool_a}``, ``{tool_b}``,
        ``{comp_a}``, ``{comp_b}``).
    titles : mapping of str to tuple of str
        Job titles by career stage: ``junior``, ``mid``, ``senior``.
    tools, core_tools, n_tools
        Technology pool; groups of tool names of which a resume names one each (the job's
        required tools); the (min, max) number of tools in one resume.
    competencies, bullets, degrees, institutions, always_certifications, certifications, employers
        The other resume pools.
    """

    id: str
    title: str
    onet_codes: tuple[str, ...]
    summary: str
    responsibilities: tuple[str, ...]
    required: tuple[str, ...]
    preferred: tuple[str, ...]
    summaries: tuple[str, ...]
    titles: Mapping[str, tuple[str, ...]]
    tools: tuple[Tool, ...]
    core_tools: tuple[tuple[str, ...], ...]
    n_tools: tuple[int, int]
    competencies: tuple[str, ...]
    bullets: tuple[str, ...]
    degrees: tuple[DegreeLevel, ...]
    institutions: tuple[str, ...]
    always_certifications: tuple[str, ...]
    certifications: tuple[str, ...]
    employers: tuple[str, ...]

    @property
    def description(self) -> str:
        """The job posting as Markdown (identical to ``specs/jobs/<id>.md``)."""
        lines = [f"# {self.title}", "", self.summary, "", "## Responsibilities", ""]
        lines += [f"- {item}" for item in self.responsibilities]
        lines += ["", "## Required qualifications", ""]
        lines += [f"- {item}" for item in self.required]
        lines += ["", "## Preferred qualifications", ""]
        lines += [f"- {item}" for item in self.preferred]
        return "\n".join(lines) + "\n"

    @property
    def all_titles(self) -> tuple[str, ...]:
        """Every job title of the family, without duplicates, in file order."""
        return tuple(dict.fromkeys(t for stage in ("junior", "mid", "senior") for t in self.titles[stage]))


def _clean(text: str) -> str:
    """Collapse the whitespace of a folded YAML scalar into single spaces."""
    return " ".join(str(text).split())


def _load_family(family_id: str) -> JobFamily:
    data = load(FAMILY_FILES[family_id])
    if data["id"] != family_id:  # pragma: no cover - guards the package data
        raise ValueError(f"{FAMILY_FILES[family_id]}: id {data['id']!r} != {family_id!r}")
    posting, profile = data["posting"], data["profile"]
    names = {str(t["name"]) for t in profile["tools"]}
    unknown = {str(t) for group in profile["core_tools"] for t in group} - names
    if unknown:  # pragma: no cover - guards the package data
        raise ValueError(f"{FAMILY_FILES[family_id]}: core_tools not in tools: {sorted(unknown)}")
    return JobFamily(
        id=family_id,
        title=data["title"],
        onet_codes=tuple(o["code"] for o in data["onet"]),
        summary=_clean(posting["summary"]),
        responsibilities=tuple(_clean(x) for x in posting["responsibilities"]),
        required=tuple(_clean(x) for x in posting["required"]),
        preferred=tuple(_clean(x) for x in posting["preferred"]),
        summaries=tuple(_clean(x) for x in profile["summaries"]),
        titles=MappingProxyType({k: tuple(v) for k, v in profile["titles"].items()}),
        tools=tuple(Tool(name=str(t["name"]), onet=str(t["onet"])) for t in profile["tools"]),
        core_tools=tuple(tuple(str(t) for t in group) for group in profile["core_tools"]),
        n_tools=(int(profile["n_tools"][0]), int(profile["n_tools"][1])),
        competencies=tuple(profile["competencies"]),
        bullets=tuple(_clean(x) for x in profile["bullets"]),
        degrees=tuple(
            DegreeLevel(level=d["level"], weight=float(d["weight"]), options=tuple(d["options"]))
            for d in profile["degrees"]
        ),
        institutions=tuple(profile["institutions"]),
        always_certifications=tuple(profile["always_certifications"]),
        certifications=tuple(profile["certifications"]),
        employers=tuple(profile["employers"]),
    )


#: Every job family, keyed by id (read-only).
FAMILIES: Mapping[str, JobFamily] = MappingProxyType({f: _load_family(f) for f in FAMILY_FILES})

#: Family ids in registry order.
FAMILY_IDS: tuple[str, ...] = tuple(FAMILIES)


def job_family(family: str) -> JobFamily:
    """Return the :class:`JobFamily` called ``family``.

    Raises
    ------
    KeyError
        If ``family`` is not one of :data:`FAMILY_IDS`; the message lists the allowed ids.
    """
    try:
        return FAMILIES[family]
    except (KeyError, TypeError):
        raise KeyError(
            ERR_UNKNOWN_FAMILY.format(family=family, allowed=", ".join(sorted(FAMILIES)))
        ) from None
