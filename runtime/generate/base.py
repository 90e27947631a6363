"""Phase A of seed 000 §3.1.2: identity-neutral base candidates for one job.

For a job of family ``F``, :func:`generate_base_candidates` writes K resumes, exactly M of which
clearly match (content drawn from ``F``: its titles, tools, bullets and degrees) and K - M of which
clearly do not (content drawn from a distant family, e.g. a nurse applying to a software developer
job; see ``non_match_donors`` in ``content/common.yaml``). For a job naming an O*NET occupation
(``onet``, issue 32), a matching candidate is written from that occupation and a non-matching one from an
occupation of another O*NET major group and a different job zone (:mod:`runtime.generate.onet`). Which
indices match is a seeded permutation. Every draw for one base candidate comes from
``runtime.seeding.rng(seed, "generate", job_id, cv_id)``, so a candidate does not depend on K or on
the other candidates.

A base candidate carries no name, age, date of birth, address, nationality, religion, photo,
language or disability information: those are written only by Phase B through the cue slots
(:mod:`runtime.generate.render`). Its experience dates and years are fixed here, so they never vary
across variants; they are chosen so that the experience is plausible for every age level of seed
000 Table 1 (see ``career_start_years`` in ``content/common.yaml``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.generate.content import load
from runtime.generate.families import FAMILIES, JobFamily, job_family
# moved to runtime.generate.resume (shared with runtime.generate.onet); imported here for earlier callers
from runtime.generate.resume import (MIN_ROLE_MONTHS, MONTHS, MONTHS_PER_ROLE_CAP, ResumeSections, Role,  # noqa: F401
                                     _month_label, _pick)
from runtime.seeding import rng

#: Error messages (asserted by tests).
ERR_K = "k must be a positive integer, got {k!r}"
ERR_M = "m must be an integer with 0 <= m <= k (k={k}), got {m!r}"
ERR_JOB_ID = "job_id must be a non-empty string, got {job_id!r}"
ERR_FAMILY_MARKET = ("job family {family!r} has no words for market {market!r} (no families block in its "
                     "markets file); give the job's O*NET-SOC code (onet) instead")

@dataclass(frozen=True)
class BaseCandidate:
    """An identity-neutral base resume for one job (one row group of the K x (1+N) matrix).

    Attributes
    ----------
    job_id : str
        The job the candidate applies to.
    cv_id : str
        ``f"{job_id}-cv{idx:03d}"``, idx = 1..K.
    family : str
        The job's family, or its O*NET-SOC code for an O*NET occupation (issue 32).
    is_true_match : int
        1 when the resume clearly matches the job, 0 when it clearly does not (ground truth).
    sections : ResumeSections
        The resume content.
    profile_family : str
        The family the content was drawn from (``family`` when matching, a distant one otherwise); for an
        O*NET occupation the O*NET-SOC code (the job's when matching, a donor's otherwise, see
        :mod:`runtime.generate.onet`).
    """

    job_id: str
    cv_id: str
    family: str
    is_true_match: int
    sections: ResumeSections
    profile_family: str


def _lead(text: str) -> str:
    """Lower-case the first letter of a competency for use inside a sentence ("Wound care" ->
    "wound care"), leaving acronyms ("IV therapy", "KPI definition", "REST API design") alone."""
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


def _sections(r: np.random.Generator, fam: JobFamily, market: dict | None = None) -> ResumeSections:
    common = load("common.yaml")
    if market is not None:  # issue 32 §2: a family under another market (cities weighted, its availability)
        names = [c["name"] for c in market["cities"]]
        weights = np.array([float(c["weight"]) for c in market["cities"]])
        common = {**common, "cities": _Weighted(names, weights / weights.sum()),
                  "availability": market["availability"]}
    as_of = common["as_of"]["year"] * 12 + common["as_of"]["month"] - 1

    # Education (O*NET weights), the career start year depends on it.
    weights = np.array([d.weight for d in fam.degrees], dtype=float)
    level = fam.degrees[int(r.choice(len(fam.degrees), p=weights / weights.sum()))]
    degree = _pick(r, level.options)
    institutions = _pick(r, fam.institutions, 2)
    education = [f"{degree} — {institutions[0]}"]
    if level.level == "master":
        bachelors = [d for d in fam.degrees if d.level == "bachelor"]
        if bachelors:
            education.append(f"{_pick(r, bachelors[0].options)} — {institutions[1]}")
    lo, hi = common["career_start_years_master" if level.level == "master" else "career_start_years"]
    start = int(r.integers(lo, hi + 1)) * 12 + int(r.integers(12))
    total = as_of - start

    # Roles: 2-4, each at least MIN_ROLE_MONTHS, contiguous up to the reference date.
    n_roles = min(int(r.integers(2, 5)), max(2, total // MONTHS_PER_ROLE_CAP))
    extra = total - n_roles * MIN_ROLE_MONTHS
    shares = r.dirichlet(np.ones(n_roles))
    lengths = [MIN_ROLE_MONTHS + int(s) for s in np.floor(shares * extra)]
    lengths[-1] += total - sum(lengths)
    employers = _pick(r, fam.employers, n_roles)
    home = _city(r, common["cities"])
    n_bullets = [int(r.integers(3, 6)) for _ in range(n_roles)]
    bullets = _pick(r, fam.bullets, sum(n_bullets))
    senior_last = total >= 5 * 12 and bool(r.random() < 0.5)
    roles = []
    begin, used = start, 0
    for i in range(n_roles):
        if i == 0:
            stage = "junior"
        elif i == n_roles - 1 and senior_last:
            stage = "senior"
        else:
            stage = "mid"
        city = home if r.random() < 0.8 else _city(r, common["cities"])
        end = begin + lengths[i]
        roles.append(
            Role(
                title=_pick(r, fam.titles[stage]),
                employer=employers[i],
                city=city,
                start=_month_label(begin),
                end="Present" if i == n_roles - 1 else _month_label(end - 1),
                bullets=tuple(bullets[used : used + n_bullets[i]]),
            )
        )
        begin, used = end, used + n_bullets[i]

    # Skills: 6-10 entries, tools first; one tool of each core group (the job's required tools).
    n_skills = int(r.integers(6, 11))
    n_tools = min(int(r.integers(fam.n_tools[0], fam.n_tools[1] + 1)), n_skills - 2)
    tools = [_pick(r, group) for group in fam.core_tools]
    rest = [t.name for t in fam.tools if t.name not in tools]
    tools += _pick(r, rest, max(n_tools - len(tools), 0))
    competencies = _pick(r, fam.competencies, n_skills - n_tools)

    n_certs = int(r.choice([0, 1, 1, 2]))
    certifications = list(fam.always_certifications) + _pick(r, fam.certifications, n_certs)

    years = total // 12
    summary = _pick(r, fam.summaries).format(
        years=years,
        tool_a=tools[0],
        tool_b=tools[1],
        comp_a=_lead(competencies[0]),
        comp_b=_lead(competencies[1]),
    )
    summary = summary[0].upper() + summary[1:]
    return ResumeSections(
        summary=summary,
        years_experience=years,
        experience=tuple(reversed(roles)),
        education=tuple(education),
        tools=tuple(tools),
        competencies=tuple(competencies),
        certifications=tuple(certifications),
        availability=_pick(r, common["availability"]),
    )


class _Weighted(list):
    """A market's cities with their sampling weights (``p``)."""

    def __init__(self, items, p):
        super().__init__(items)
        self.p = p


def _city(r: np.random.Generator, cities):
    """One city: uniform over seed 000's list (``common.yaml``), by weight over a market's."""
    if isinstance(cities, _Weighted):
        return cities[int(r.choice(len(cities), p=cities.p))]
    return _pick(r, cities)


def in_market(fam: JobFamily, market: dict) -> JobFamily:
    """A hand-written family with the words of another labour market (``families`` of
    ``content/markets/<market>.yaml``): its institutions, employers and certifications replaced, each
    substitution applied to its summaries, competencies, bullets, degrees and certifications (issue 32 §2)."""
    import dataclasses

    spec = market["families"]
    subs = [tuple(pair) for pair in spec.get("substitutions", [])]

    def sub(text: str) -> str:
        for old, new in subs:
            text = text.replace(old, new)
        return text

    institutions = spec["nurse_institutions"] if fam.id == "registered-nurse" else spec["institutions"]
    return dataclasses.replace(
        fam,
        summaries=tuple(sub(x) for x in fam.summaries), competencies=tuple(sub(x) for x in fam.competencies),
        bullets=tuple(sub(x) for x in fam.bullets),
        degrees=tuple(dataclasses.replace(d, options=tuple(sub(o) for o in d.options)) for d in fam.degrees),
        institutions=tuple(institutions), employers=tuple(spec["employers"].get(fam.id, fam.employers)),
        certifications=tuple(sub(x) for x in spec.get("certifications", {}).get(fam.id, fam.certifications)),
        always_certifications=tuple(sub(x) for x in spec.get("always_certifications", {}).get(
            fam.id, fam.always_certifications)))


def generate_base_candidates(*, job_id: str, family: str | None, k: int, m: int, seed: int,
                             onet: str | None = None, market: str = "fr") -> list[BaseCandidate]:
    """Write the K identity-neutral base candidates of one job (seed 000 §3.1.2, Phase A).

    Parameters
    ----------
    job_id : str
        The job's id; base candidates are ``f"{job_id}-cv{idx:03d}"``, idx = 1..k.
    family : str or None
        The job's family (one of :data:`runtime.generate.families.FAMILY_IDS`); None with ``onet``.
    onet : str, optional
        The job's O*NET-SOC code instead of a family (issue 32 §1): matching candidates are written from that
        occupation, non-matching ones from an occupation of another major group and a different job zone
        (:func:`runtime.generate.onet.donor_codes`), drawn per candidate.
    market : str
        Labour market of the résumés (``fr`` or ``us``, ``content/markets/``). A hand-written family under
        a market other than ``fr`` keeps its sampling design with that market's cities, availability lines,
        institutions, employers, certifications and substitutions (:func:`in_market`); ``fr`` is seed 000's
        setting, byte for byte.
    k : int
        Number of base candidates (``candidates.base_per_job``), >= 1.
    m : int
        Number of clearly matching candidates (``candidates.matching_per_job``), 0 <= m <= k.
    seed : int
        The spec's seed.

    Returns
    -------
    list of BaseCandidate
        In cv_id order; exactly ``m`` have ``is_true_match == 1``, chosen by a permutation drawn from
        ``rng(seed, "generate", job_id, "matches")``.

    Raises
    ------
    KeyError
        Unknown family.
    ValueError
        Invalid ``k``, ``m`` or ``job_id``; an unusable O*NET code; an unknown market, or a family with a
        market other than ``fr``.
    """
    if onet is not None:
        return _onet_candidates(job_id=job_id, code=onet, k=k, m=m, seed=seed, market=market)
    fam = job_family(family)
    content = None
    if market != "fr":  # issue 32 §2: the family's pools in another market's words
        from runtime.generate.onet import market as market_content

        content = market_content(market)
        if "families" not in content:
            raise ValueError(ERR_FAMILY_MARKET.format(family=family, market=market))
    _check(job_id, k, m)
    k, m = int(k), int(m)
    matching = set(int(i) for i in rng(seed, "generate", job_id, "matches").permutation(k)[:m])
    donors = load("common.yaml")["non_match_donors"][fam.id]
    out = []
    for idx in range(1, k + 1):
        cv_id = f"{job_id}-cv{idx:03d}"
        r = rng(seed, "generate", job_id, cv_id)
        match = (idx - 1) in matching
        profile = fam if match else FAMILIES[_pick(r, donors)]
        if content is not None:
            profile = in_market(profile, content)
        out.append(
            BaseCandidate(
                job_id=job_id,
                cv_id=cv_id,
                family=fam.id,
                is_true_match=int(match),
                sections=_sections(r, profile, content),
                profile_family=profile.id,
            )
        )
    return out


def _check(job_id, k, m) -> None:
    if not isinstance(job_id, str) or not job_id:
        raise ValueError(ERR_JOB_ID.format(job_id=job_id))
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(ERR_K.format(k=k))
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 0 <= m <= k:
        raise ValueError(ERR_M.format(k=k, m=m))


def _onet_candidates(*, job_id: str, code: str, k: int, m: int, seed: int, market: str) -> list[BaseCandidate]:
    """:func:`generate_base_candidates` for an O*NET occupation (see :mod:`runtime.generate.onet`)."""
    from runtime.generate import onet

    _check(job_id, k, m)
    onet.market(market)
    job = onet.occupation(code)
    donors = onet.donor_codes(code)
    k, m = int(k), int(m)
    matching = set(int(i) for i in rng(seed, "generate", job_id, "matches").permutation(k)[:m])
    out = []
    for idx in range(1, k + 1):
        cv_id = f"{job_id}-cv{idx:03d}"
        r = rng(seed, "generate", job_id, cv_id)
        match = (idx - 1) in matching
        profile = job if match else onet.occupation(_pick(r, donors))
        out.append(BaseCandidate(job_id=job_id, cv_id=cv_id, family=code, is_true_match=int(match),
                                 sections=onet.sections(r, profile, market), profile_family=profile.code))
    return out
