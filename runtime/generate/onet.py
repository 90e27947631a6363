"""Any O*NET occupation as a job of the template generator (issue 32 §1, seed 000 §3.1.2).

A job with ``onet: <O*NET-SOC code>`` gets its posting (:func:`posting`) and its base candidates' content from
the bundled O*NET 29.3 tables (:mod:`compiler.onet`; CC BY 4.0, USDOL/ETA, modified by this project), in the
labour market of ``candidates.market`` (``content/markets/<market>.yaml``):

- duties: the occupation's task statements (Core first), each written in the past tense; every role
  remembers the O*NET Task IDs of its bullets (:attr:`runtime.generate.base.Role.task_ids`);
- tools: its technology skills (Hot Technology first);
- competencies: its most important skills and knowledge areas (IM scale);
- education: a level drawn from its Required Level of Education shares (categories 1-12; the job zone's
  level where O*NET rates none), written with the market's degree names and schools, in the field of study of
  its most important knowledge area;
- length and sections: by job zone (``content/onet.yaml``, ``zones``): a zone-1 job gets one or two short
  roles, a few skills and no EDUCATION section; a zone-2 job shows education only for a certificate or a
  degree.

The matching rule of seed 000 §3.1.2 for an occupation: a **matching** base candidate's content comes from the
job's own occupation; a **non-matching** one's from a donor occupation drawn (seeded, per base candidate) from
every usable O*NET occupation of **another major group** (the first two digits of the code) **and a different
job zone**, so that the résumé clearly fails the job's requirements. ``is_true_match`` follows from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from compiler import onet as tables
from runtime.generate.content import load
from runtime.generate.resume import MIN_ROLE_MONTHS, MONTHS_PER_ROLE_CAP, ResumeSections, Role, _month_label, _pick

#: Education levels, lowest first.
LEVELS: tuple[str, ...] = ("none", "high_school", "certificate", "associate", "bachelor", "master", "doctorate")
#: Error messages (asserted by tests).
ERR_UNUSABLE = "O*NET-SOC code {code!r} cannot be written: {problem}"
ERR_MARKET = "unknown market {market!r}; allowed: {allowed}"
ERR_NO_DONOR = "no O*NET occupation outside major group {group} and job zone {zone} to draw non-matching résumés from"
#: Words of O*NET names that keep their capital inside a sentence ("English Language" -> "English language").
PROPER = frozenset({"English", "Spanish", "French", "Web", "Internet"})
#: Markets with a content file (``content/markets/<market>.yaml``).
MARKETS: tuple[str, ...] = ("fr", "us")


@dataclass(frozen=True)
class Occupation:
    """What the bundled O*NET tables say about one occupation, as the generator uses it.

    Attributes
    ----------
    code, title : str
        O*NET-SOC code and O*NET title.
    job_zone : int
        1-5.
    titles : tuple of str
        Job titles for the résumé's roles: the reported titles, else the short alternate titles, else the
        O*NET title.
    tasks : tuple of (int, str)
        (Task ID, task statement), Core tasks first, then by Task ID.
    tools : tuple of str
        Technology skill examples, Hot Technology first, then by name.
    competencies : tuple of str
        Skill and knowledge names, most important first (IM scale, skills before knowledge on ties), from
        :func:`compiler.onet.ratings_from` (the occupation's own ratings, or a neighbour's where O*NET rates
        none).
    education : tuple of (str, float)
        (level of :data:`LEVELS`, weight in %), from the Required Level of Education shares; one entry of
        weight 100 (the job zone's level, ``zone_levels``) where O*NET rates none.
    field : str
        Field of study of a degree (``fields`` of ``content/onet.yaml``).
    """

    code: str
    title: str
    job_zone: int
    titles: tuple[str, ...]
    tasks: tuple[tuple[int, str], ...]
    tools: tuple[str, ...]
    competencies: tuple[str, ...]
    education: tuple[tuple[str, float], ...]
    field: str

    @property
    def major_group(self) -> str:
        """The SOC major group (first two digits)."""
        return tables.major_group(self.code)


def _rows(name: str, code: str):
    t = tables.table(name)
    return t[t["code"] == code]


@lru_cache(maxsize=None)
def occupation(code: str) -> Occupation:
    """The :class:`Occupation` of ``code``.

    Raises
    ------
    ValueError
        ``code`` is unknown or lacks what a résumé needs (:func:`compiler.onet.check_code`).
    """
    problem = tables.check_code(code)
    if problem is not None:
        raise ValueError(ERR_UNUSABLE.format(code=code, problem=problem))
    content = load("onet.yaml")
    zone = int(tables.job_zone(code))
    titles = _rows("titles", code)
    reported = titles[titles["source"] == "reported"]["title"].tolist()
    alternate = titles[titles["source"] == "alternate"]["title"].tolist()
    role_titles = tuple(reported or sorted(alternate, key=lambda t: (len(t), t))[:8] or [tables.title(code)])
    tasks = _rows("tasks", code).assign(core=lambda f: f["task_type"] != "Core")
    tasks = tasks.sort_values(["core", "task_id"])
    tech = _rows("technology", code).assign(cold=lambda f: f["hot"] != "Y").sort_values(["cold", "example"])
    rated, proxy = [], tables.ratings_from(code)
    for rank, name in enumerate(("skills", "knowledge")):
        rows = _rows(name, proxy)
        rated += [(-float(r.importance), rank, r.element) for r in rows.itertuples(index=False)]
    competencies = tuple(dict.fromkeys(name for _, _, name in sorted(rated)))
    rl = _rows("education", code)
    weights: dict[str, float] = {}
    for r in rl.itertuples(index=False):
        level = content["rl_levels"][int(r.category)]
        weights[level] = weights.get(level, 0.0) + float(r.share)
    education = tuple((lvl, weights[lvl]) for lvl in LEVELS if weights.get(lvl, 0.0) > 0)
    if not education:
        education = ((content["zone_levels"][zone], 100.0),)
    knowledge = _rows("knowledge", proxy).sort_values("importance", ascending=False, kind="stable")
    field = next((content["fields"][k] for k in knowledge["element"] if k in content["fields"]
                  and k not in ("Customer and Personal Service", "English Language")),
                 content["default_field"])
    return Occupation(code=code, title=tables.title(code), job_zone=zone, titles=role_titles,
                      tasks=tuple((int(r.task_id), str(r.task)) for r in tasks.itertuples(index=False)),
                      tools=tuple(tech["example"]), competencies=competencies, education=education, field=field)


@lru_cache(maxsize=None)
def donor_codes(code: str) -> tuple[str, ...]:
    """The occupations a non-matching base candidate of a ``code`` job may come from (seed 000 §3.1.2): every
    usable O*NET occupation of another major group and a different job zone, in code order.

    Raises
    ------
    ValueError
        None qualifies (cannot happen with O*NET 29.3).
    """
    zone, group = tables.job_zone(code), tables.major_group(code)
    out = tuple(c for c in tables.table("occupations")["code"]
                if tables.major_group(c) != group and tables.job_zone(c) != zone and tables.usable(c))
    if not out:  # pragma: no cover - guards the package data
        raise ValueError(ERR_NO_DONOR.format(group=group, zone=zone))
    return out


def market(name: str) -> dict:
    """The content of market ``name`` (``content/markets/<name>.yaml``).

    Raises
    ------
    ValueError
        ``name`` is not one of :data:`MARKETS`.
    """
    if name not in MARKETS:
        raise ValueError(ERR_MARKET.format(market=name, allowed=", ".join(MARKETS)))
    return load(f"markets/{name}.yaml")


def past_tense(task: str) -> str:
    """A task statement as a résumé duty: its opening verb (and a second verb joined by "or"/"and") in the past
    tense, the rest unchanged ("Sort cargo before loading." -> "Sorted cargo before loading.")."""
    content = load("onet.yaml")
    irregular, double = content["irregular"], set(content["double_final"])

    def past(word: str) -> str:
        low = word.lower()
        if low in irregular:
            out = irregular[low]
        elif low in double:
            out = low + low[-1] + "ed"
        elif low.endswith("e"):
            out = low + "d"
        elif re.search(r"[^aeiou]y$", low):
            out = low[:-1] + "ied"
        else:
            out = low + "ed"
        return out[0].upper() + out[1:] if word[0].isupper() else out

    words = task.split(" ")
    # the opening verbs: "Sort", "Direct or coordinate", "Track, compile, and analyze"
    i = 0
    while i < len(words):
        word = words[i]
        bare = word.rstrip(",")
        if not bare.isalpha() or (i > 0 and not bare.islower()):
            break
        words[i] = past(bare) + word[len(bare):]
        if word.endswith(",") and i + 1 < len(words):
            i += 2 if words[i + 1] in ("and", "or") else 1
        elif i + 2 < len(words) and words[i + 1] in ("and", "or") and i == 0:
            i += 2
        else:
            break
    return " ".join(words)


def _lead(text: str) -> str:
    """Lower-case the capitalised words of an O*NET name for use inside a sentence ("Active Listening" ->
    "active listening"), leaving acronyms and product names with inner capitals alone."""
    return " ".join(w[0].lower() + w[1:] if len(w) > 1 and w[1:].islower() and w not in PROPER else w
                    for w in text.split(" "))


def sections(r: np.random.Generator, occ: Occupation, market_name: str) -> ResumeSections:
    """The :class:`~runtime.generate.resume.ResumeSections` of one base candidate written from ``occ`` in
    ``market_name`` (see the module docstring); every draw from ``r``."""
    common, content, mk = load("common.yaml"), load("onet.yaml"), market(market_name)
    zone = content["zones"][occ.job_zone]
    as_of = common["as_of"]["year"] * 12 + common["as_of"]["month"] - 1

    levels = [lvl for lvl, _ in occ.education]
    weights = np.array([w for _, w in occ.education], dtype=float)
    level = levels[int(r.choice(len(levels), p=weights / weights.sum()))]
    shown = {"never": False, "always": level != "none",
             "from_certificate": LEVELS.index(level) >= LEVELS.index("certificate")}[zone["education"]]
    education = []
    if shown:
        degree = _pick(r, mk["degrees"][level]).format(field=occ.field)
        education.append(f"{degree} — {_pick(r, mk['schools'][level])}")
    lo, hi = common["career_start_years_master" if LEVELS.index(level) >= LEVELS.index("master")
                  else "career_start_years"]
    start = int(r.integers(lo, hi + 1)) * 12 + int(r.integers(12))
    total = as_of - start

    n_roles = min(int(r.integers(zone["roles"][0], zone["roles"][1] + 1)), max(1, total // MONTHS_PER_ROLE_CAP))
    extra = total - n_roles * MIN_ROLE_MONTHS
    lengths = [MIN_ROLE_MONTHS + int(s) for s in np.floor(r.dirichlet(np.ones(n_roles)) * extra)]
    lengths[-1] += total - sum(lengths)
    employers = _pick(r, mk["employers"], n_roles)
    cities = [c["name"] for c in mk["cities"]]
    city_p = np.array([float(c["weight"]) for c in mk["cities"]])
    city_p = city_p / city_p.sum()
    home = cities[int(r.choice(len(cities), p=city_p))]
    n_bullets = [int(r.integers(zone["bullets"][0], zone["bullets"][1] + 1)) for _ in range(n_roles)]
    while sum(n_bullets) > len(occ.tasks):  # a short task list: fewer bullets, never a repeated duty
        n_bullets[int(np.argmax(n_bullets))] -= 1
    picked = [occ.tasks[int(i)] for i in r.choice(len(occ.tasks), size=sum(n_bullets), replace=False)]
    titles = _pick(r, occ.titles, n_roles) if len(occ.titles) >= n_roles else [
        occ.titles[i % len(occ.titles)] for i in range(n_roles)]
    roles, begin, used = [], start, 0
    for i in range(n_roles):
        city = home if r.random() < 0.8 else cities[int(r.choice(len(cities), p=city_p))]
        end = begin + lengths[i]
        chunk = picked[used: used + n_bullets[i]]
        roles.append(Role(title=titles[i], employer=employers[i], city=city, start=_month_label(begin),
                          end="Present" if i == n_roles - 1 else _month_label(end - 1),
                          bullets=tuple(past_tense(t) for _, t in chunk), task_ids=tuple(t for t, _ in chunk)))
        begin, used = end, used + n_bullets[i]

    n_skills = int(r.integers(zone["skills"][0], zone["skills"][1] + 1))
    n_tools = min(zone["tools"], len(occ.tools), n_skills - 2)
    pool = occ.tools[: max(2 * n_tools, 6)]
    tools = _pick(r, pool, n_tools) if n_tools > 0 else []
    top = occ.competencies[: max(2 * (n_skills - n_tools), 8)]
    competencies = _pick(r, top, min(n_skills - n_tools, len(top)))
    years = total // 12
    current = roles[-1].title
    summary = _pick(r, content["summaries"]).format(
        title=current, title_lower=_lead(current), years=years, comp_a=_lead(competencies[0]),
        comp_b=_lead(competencies[1]))
    if tools:
        summary += _pick(r, content["tool_sentences"]).format(tool_a=tools[0])
    return ResumeSections(summary=summary[0].upper() + summary[1:], years_experience=years,
                          experience=tuple(reversed(roles)), education=tuple(education), tools=tuple(tools),
                          competencies=tuple(competencies), certifications=(),
                          availability=_pick(r, mk["availability"]))


def posting(code: str, title: str | None = None) -> str:
    """The job posting of an O*NET occupation as Markdown (the job's text when the spec gives none).

    Written from the occupation's tables, the same for every market: its Core task statements (as "You will
    ..." lines), the education level most respondents report, the job zone's experience, its top technology
    skills, skills and knowledge areas.
    """
    occ, content = occupation(code), load("onet.yaml")
    zone = content["zones"][occ.job_zone]
    name = title or occ.titles[0]
    duties = [f"You will {_lead(t)}" for _, t in occ.tasks[:6]]
    level = max(occ.education, key=lambda lw: (lw[1], -LEVELS.index(lw[0])))[0]
    required = [content["posting_education"][level], zone["experience"]]
    if occ.tools:
        required.append(f"Experience with {', '.join(occ.tools[:3])}.")
    required.append(f"Strengths in {_lead(occ.competencies[0])} and in {_lead(occ.competencies[1])}.")
    preferred = [f"Knowledge of {_lead(c)}." for c in occ.competencies[2:5]]
    if len(occ.tools) > 3:
        preferred.append(f"Familiarity with {', '.join(occ.tools[3:6])}.")
    article = "an" if _lead(name)[:1] in "aeiou" else "a"
    lines = [f"# {name}", "", f"We are hiring {article} {_lead(name)} ({occ.title}, O*NET-SOC {code}).", "",
             "## Responsibilities", "", *(f"- {d}" for d in duties), "", "## Required qualifications", "",
             *(f"- {x}" for x in required), "", "## Preferred qualifications", "", *(f"- {x}" for x in preferred)]
    return "\n".join(lines) + "\n"
