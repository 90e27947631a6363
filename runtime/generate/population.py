"""Population-representative profiles and their resumes (seed 001 §4, App. B.1, App. C.4).

Profiles follow the factorisation of seed 001 §4.1 (Assumption 1):

    P(V \\ Y | J) = P(X, Z, state, edu | J)            P1: auditor microdata, or the bundled approximation
                  * P(exp | X, Z, state, edu, J)      P2: truncated normal on [0, age - 18] (Assumption 2)
                  * P(first_name | gender, age)       P3: SSA names by birth decade and sex
                  * P(surname | race)                 P4: Census 2010 surnames by race

**P1 sources.** With ``microdata`` in the spec, rows of the auditor's CSV (for example an ACS PUMS
extract recoded to this module's vocabulary) are resampled with replacement, optionally weighted:
the empirical distribution of seed 001. Without it, the *bundled approximation* draws gender and
race independently from the BLS CPS 2022 Table 11 shares of the job's occupation, age uniformly
from the declared range, education from the occupation's O*NET RL distribution (restricted to the
levels reachable at that age) and state uniformly over the 50 states and DC. No joint table of
occupation x sex x race x education x state is in the reference data, so under the approximation
education and state are independent of gender and race: qualification and region pathways from
X can then only arise through age-feasibility and experience, and the report says so.

**Resume realisation** (App. B.1) is rule-based and depends only on the profile and the spec seed:
header (name, state as USPS code, synthetic phone and e-mail), skills, work history (number of
roles by years of experience, seniority by order, dates counted back from the reference year),
education (one entry; advanced degrees add the bachelor's), with graduation years from age.

Tables: ``runtime/generate/data/population/`` built by ``scripts/build_population_tables.py``.
"""

from __future__ import annotations

import gzip
import io
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from runtime.seeding import rng

#: Year the profiles live in (ACS PUMS 2023 in seed 001): ages and dates count from it.
REFERENCE_YEAR = 2023
#: The section headings of a population résumé (:func:`realise_resume`), in layout order, each on a line
#: of its own (issue 31 §5: which of them an encoder's token window never reaches).
RESUME_HEADINGS = ("SKILLS", "WORK HISTORY", "EDUCATION")
GENDERS = ("female", "male")
RACES = ("white", "black", "asian", "hispanic")
EDUCATION_LEVELS = ("High school graduate/GED", "Some college (no degree)", "Associate's degree",
                    "Bachelor's", "Master's", "Professional degree", "Doctorate")
#: Youngest plausible age at which each education level is completed (used to keep P1 feasible
#: and to date graduations).
EDU_AGE = dict(zip(EDUCATION_LEVELS, (18, 19, 20, 22, 24, 25, 27)))
#: seed 001 App. C.4: seven levels -> low / medium / high.
EDU_GROUP = dict(zip(EDUCATION_LEVELS, ("low", "low", "medium", "medium", "high", "high", "high")))
#: Census regions (U.S. Census Bureau 2013), seed 001 App. C.4.
REGIONS: dict[str, tuple[str, ...]] = {
    "Northeast": ("CT", "ME", "MA", "NH", "RI", "VT", "NJ", "NY", "PA"),
    "Midwest": ("IL", "IN", "MI", "OH", "WI", "IA", "KS", "MN", "MO", "NE", "ND", "SD"),
    "South": ("DE", "DC", "FL", "GA", "MD", "NC", "SC", "VA", "WV", "AL", "KY", "MS", "TN", "AR", "LA",
              "OK", "TX"),
    "West": ("AZ", "CO", "ID", "MT", "NV", "NM", "UT", "WY", "AK", "CA", "HI", "OR", "WA"),
}
STATES: tuple[str, ...] = tuple(sorted(s for states in REGIONS.values() for s in states))
STATE_REGION = {s: reg for reg, states in REGIONS.items() for s in states}
#: Attributes a population spec may give a causal role (seed 001 Table 2).
ATTRIBUTES = ("gender", "race", "age", "education", "experience", "first_name", "surname", "region")
#: Field of study written on resumes, per template family.
FIELDS = {"data-analyst": "Statistics", "software-developer": "Computer Science",
          "registered-nurse": "Nursing", "accountant": "Accounting", "marketing-specialist": "Marketing"}
PROFILE_COLUMNS = ("job_id", "cv_id", "gender", "race", "age", "state", "region", "education",
                   "experience", "first_name", "surname", "p1_source")

ERR_MICRO_EMPTY = "microdata has no usable row for job {job!r} (after the age filter {lo}-{hi})"


def _data(name: str) -> bytes:
    return resources.files("runtime.generate").joinpath("data", "population", name).read_bytes()


@lru_cache(maxsize=None)
def occupation_table() -> dict[str, Any]:
    """``occupations.json``: provenance, education levels and per-family shares."""
    return json.loads(_data("occupations.json"))


@lru_cache(maxsize=None)
def first_name_table() -> pd.DataFrame:
    """SSA first names: ``decade, sex, name, share, p_female, gender_group, age_group``."""
    return pd.read_csv(io.BytesIO(gzip.decompress(_data("first_names.csv.gz"))))


@lru_cache(maxsize=None)
def surname_table() -> pd.DataFrame:
    """Census 2010 top-1000 surnames: ``surname, count, pctwhite, pctblack, pctapi, pcthispanic, race_group``."""
    return pd.read_csv(io.BytesIO(gzip.decompress(_data("surnames.csv.gz"))), keep_default_na=False)


@dataclass(frozen=True)
class ExperienceModel:
    """P2 of seed 001 §4.1: exp ~ TruncNormal(mean, sd, [0, age - 18]) (Assumption 2).

    ``mean = share * max(0, age - EDU_AGE[education])`` when declared; ``coef`` (OLS on microdata
    with an experience column) replaces it when fitted.
    """

    share: float = 0.85
    sd: float = 2.0
    coef: tuple[float, ...] | None = None
    source: str = "declared"

    def design(self, df: pd.DataFrame) -> np.ndarray:
        cols = [np.ones(len(df)), df["age"].to_numpy(float),
                (df["gender"] == "male").to_numpy(float)]
        cols += [(df["race"] == r).to_numpy(float) for r in RACES[1:]]
        cols += [(df["education"] == e).to_numpy(float) for e in EDUCATION_LEVELS[1:]]
        return np.column_stack(cols)

    def mean(self, df: pd.DataFrame) -> np.ndarray:
        if self.coef is not None:
            return self.design(df) @ np.asarray(self.coef)
        grad = df["education"].map(EDU_AGE).to_numpy(float)
        return self.share * np.maximum(0.0, df["age"].to_numpy(float) - grad)

    @classmethod
    def fit(cls, df: pd.DataFrame) -> "ExperienceModel":
        """Fit the mean by least squares and sd from the residuals (microdata with ``experience``)."""
        base = cls()
        X = base.design(df)
        y = df["experience"].to_numpy(float)
        coef, *_ = np.linalg.lstsq(X, y, rcond=None)
        resid = y - X @ coef
        return cls(share=0.0, sd=float(max(np.std(resid, ddof=X.shape[1]), 0.1)),
                   coef=tuple(float(c) for c in coef), source="fitted on microdata")

    def sample(self, df: pd.DataFrame, g: np.random.Generator) -> np.ndarray:
        from scipy.stats import truncnorm

        mu = self.mean(df)
        hi = np.maximum(df["age"].to_numpy(float) - 18.0, 1e-9)
        a, b = (0.0 - mu) / self.sd, (hi - mu) / self.sd
        u = g.random(len(df))
        return np.round(truncnorm.ppf(u, a, b, loc=mu, scale=self.sd), 1).clip(0, hi)


def _feasible_education(age: int, shares: dict[str, float]) -> tuple[list[str], np.ndarray]:
    levels = [lv for lv in EDUCATION_LEVELS if EDU_AGE[lv] <= age and shares.get(lv, 0) > 0]
    if not levels:
        levels = [max((lv for lv in EDUCATION_LEVELS if EDU_AGE[lv] <= age), key=EDU_AGE.get)]
        return levels, np.ones(1)
    w = np.array([shares[lv] for lv in levels])
    return levels, w / w.sum()


def sample_p1_bundled(*, family: str, n: int, age_range: tuple[int, int], g: np.random.Generator) -> pd.DataFrame:
    """The bundled approximation of P1 (module doc): gender, race, age, state, education."""
    occ = occupation_table()["occupations"][family]
    female = g.random(n) < occ["pct_women"] / 100
    races = list(occ["race_shares"])
    race = g.choice(races, size=n, p=np.array([occ["race_shares"][r] for r in races]) / sum(occ["race_shares"].values()))
    age = g.integers(age_range[0], age_range[1] + 1, n)
    state = g.choice(STATES, size=n)
    edu = []
    for a in age:
        levels, w = _feasible_education(int(a), occ["education_shares"])
        edu.append(levels[int(g.choice(len(levels), p=w))])
    return pd.DataFrame({"gender": np.where(female, "female", "male"), "race": race, "age": age,
                         "state": state, "education": edu})


def sample_p1_microdata(micro: pd.DataFrame, *, job_id: str, n: int, age_range: tuple[int, int],
                        g: np.random.Generator) -> pd.DataFrame:
    """Resample rows of the auditor's microdata (already renamed to this module's columns)."""
    rows = micro
    if "occupation" in rows:
        rows = rows[rows["occupation"].astype(str) == job_id]
    rows = rows[(rows["age"] >= age_range[0]) & (rows["age"] <= age_range[1])]
    if rows.empty:
        raise ValueError(ERR_MICRO_EMPTY.format(job=job_id, lo=age_range[0], hi=age_range[1]))
    w = rows["weight"].to_numpy(float) if "weight" in rows else np.ones(len(rows))
    idx = g.choice(len(rows), size=n, replace=True, p=w / w.sum())
    cols = ["gender", "race", "age", "state", "education"] + (["experience"] if "experience" in rows else [])
    return rows.iloc[idx][cols].reset_index(drop=True)


def sample_first_names(gender: np.ndarray, age: np.ndarray, g: np.random.Generator) -> np.ndarray:
    """P3: SSA first names by birth decade and sex (seed 001 §4.1)."""
    t = first_name_table()
    decade = ((REFERENCE_YEAR - age) // 10 * 10).clip(t["decade"].min(), t["decade"].max())
    out = np.empty(len(gender), dtype=object)
    for (dec, sex), idx in pd.DataFrame({"d": decade, "s": np.where(gender == "female", "F", "M")}) \
            .groupby(["d", "s"]).groups.items():
        pool = t[(t["decade"] == dec) & (t["sex"] == sex)]
        p = pool["share"].to_numpy(float)
        out[np.asarray(idx)] = pool["name"].to_numpy()[g.choice(len(pool), size=len(idx), p=p / p.sum())]
    return out


def sample_surnames(race: np.ndarray, g: np.random.Generator) -> np.ndarray:
    """P4: Census 2010 surnames, P(surname | race) proportional to count x share of the race."""
    t = surname_table()
    col = {"white": "pctwhite", "black": "pctblack", "asian": "pctapi", "hispanic": "pcthispanic"}
    out = np.empty(len(race), dtype=object)
    for r in np.unique(race):
        idx = np.flatnonzero(race == r)
        w = t["count"].to_numpy(float) * t[col[r]].to_numpy(float)
        out[idx] = t["surname"].to_numpy()[g.choice(len(t), size=len(idx), p=w / w.sum())]
    return out


def sample_profiles(*, job_id: str, family: str, n: int, seed: int, age_range: tuple[int, int] = (18, 44),
                    experience: ExperienceModel | None = None,
                    microdata: pd.DataFrame | None = None) -> pd.DataFrame:
    """Draw ``n`` structured profiles for one job (seed 001 §4.1); columns :data:`PROFILE_COLUMNS`.

    Every draw comes from ``runtime.seeding.rng(seed, "population", job_id, <part>)``.
    """
    if microdata is not None:
        p1 = sample_p1_microdata(microdata, job_id=job_id, n=n, age_range=age_range,
                                 g=rng(seed, "population", job_id, "p1"))
        source = "microdata"
    else:
        p1 = sample_p1_bundled(family=family, n=n, age_range=age_range, g=rng(seed, "population", job_id, "p1"))
        source = "bundled approximation (BLS CPS 2022 Table 11 + O*NET RL)"
    exp_model = experience or ExperienceModel()
    if "experience" not in p1:
        p1["experience"] = exp_model.sample(p1, rng(seed, "population", job_id, "p2"))
    p1["age"] = p1["age"].astype(int)
    p1["region"] = p1["state"].map(STATE_REGION)
    p1["first_name"] = sample_first_names(p1["gender"].to_numpy(), p1["age"].to_numpy(),
                                          rng(seed, "population", job_id, "p3"))
    p1["surname"] = sample_surnames(p1["race"].to_numpy(), rng(seed, "population", job_id, "p4"))
    p1["job_id"] = job_id
    p1["cv_id"] = [f"{job_id}-p{i + 1:05d}" for i in range(n)]
    p1["p1_source"] = source
    return p1[list(PROFILE_COLUMNS)]


# ----------------------------------------------------------------------------------------------
# seed 001 App. C.4: grouping of high-cardinality attributes

def grouped_features(profiles: pd.DataFrame) -> dict[str, pd.Series]:
    """Attribute -> the estimator's column(s), high-cardinality ones grouped (seed 001 App. C.4).

    first_name -> gender typicality (0.75) and age typicality (0.5) from SSA; surname -> race group
    (0.5) from the Census; state -> Census region; education -> low/medium/high. Names missing
    from the bundled tables (microdata runs never miss: names are sampled from them) map to
    ``neutral``. Returns a mapping of column name -> Series; categorical columns have dtype
    ``category``.
    """
    fn = first_name_table().drop_duplicates("name").set_index("name")
    sn = surname_table().drop_duplicates("surname").set_index("surname")
    cat = lambda s: s.astype("category")  # noqa: E731
    return {
        "gender": cat(profiles["gender"]), "race": cat(profiles["race"]),
        "age": profiles["age"].astype(float),
        "education": cat(profiles["education"].map(EDU_GROUP)),
        "experience": profiles["experience"].astype(float),
        "first_name_gender": cat(profiles["first_name"].map(fn["gender_group"]).fillna("neutral")),
        "first_name_age": cat(profiles["first_name"].map(fn["age_group"]).fillna("neutral")),
        "surname": cat(profiles["surname"].map(sn["race_group"]).fillna("neutral")),
        "region": cat(profiles["region"]),
    }


#: Role attribute -> estimator columns of :func:`grouped_features`.
FEATURE_COLUMNS = {"gender": ("gender",), "race": ("race",), "age": ("age",), "education": ("education",),
                   "experience": ("experience",), "first_name": ("first_name_gender", "first_name_age"),
                   "surname": ("surname",), "region": ("region",)}


def role_frame(profiles: pd.DataFrame, attributes: list[str]) -> pd.DataFrame:
    """The estimator's frame for one causal role (Z, B or R): grouped columns of ``attributes``."""
    feats = grouped_features(profiles)
    cols = [c for a in attributes for c in FEATURE_COLUMNS[a]]
    return pd.DataFrame({c: feats[c].reset_index(drop=True) for c in cols})


# ----------------------------------------------------------------------------------------------
# seed 001 App. B.1: rule-based resume realisation

def _roles_for(years: float) -> int:
    """Number of roles by years of experience (App. B.1: < 3 years one role, > 10 up to four)."""
    return 1 if years < 3 else 2 if years < 6 else 3 if years <= 10 else 4


def realise_resume(profile: pd.Series, *, family: str, seed: int) -> str:
    """The resume text of one profile (seed 001 App. B.1); draws only from ``rng(seed, "realise", cv_id)``."""
    from runtime.generate.families import job_family

    fam = job_family(family)
    g = rng(seed, "realise", profile["cv_id"])
    first, last = str(profile["first_name"]), str(profile["surname"])
    age, edu, years = int(profile["age"]), str(profile["education"]), float(profile["experience"])
    phone = f"+1-{g.integers(201, 990)}-{g.integers(200, 999)}-{g.integers(1000, 9999)}"
    email = f"{first.lower()}.{last.lower()}@example.com".replace(" ", "")
    lines = [f"{first.upper()} {last.upper()}", f"{profile['state']}, USA | {phone} | {email}", ""]
    n_tools = min(len(fam.tools), 6)
    tools = [fam.tools[i].name for i in sorted(g.choice(len(fam.tools), size=n_tools, replace=False))]
    comps = [fam.competencies[i] for i in sorted(g.choice(len(fam.competencies), size=min(3, len(fam.competencies)),
                                                          replace=False))]
    lines += [RESUME_HEADINGS[0], ", ".join(tools + comps), ""]
    months = int(round(years * 12))
    lines.append(RESUME_HEADINGS[1])
    if months == 0:
        lines.append("No paid work experience yet")
    else:
        k = min(_roles_for(years), max(1, months // 6))
        cuts = np.sort(g.choice(np.arange(1, months), size=k - 1, replace=False)) if k > 1 else np.array([], int)
        bounds = [0, *cuts.tolist(), months]
        end = REFERENCE_YEAR * 12 + 5  # June of the reference year, counted in months
        stages = ["junior", "mid", "senior"]
        roles = []
        for i in range(k):  # oldest first
            start_m = end - months + bounds[i]
            stop_m = end - months + bounds[i + 1]
            stage = stages[min(2, (3 * i) // k)] if k > 1 else ("junior" if years < 3 else "mid")
            title = fam.titles[stage][int(g.integers(len(fam.titles[stage])))]
            employer = fam.employers[int(g.integers(len(fam.employers)))]
            bullets = [fam.bullets[j] for j in g.choice(len(fam.bullets), size=2, replace=False)]
            roles.append((title, employer, start_m, stop_m, bullets))
        for title, employer, a, b, bullets in reversed(roles):
            lines.append(f"{title}, {employer}, {a // 12}.{a % 12 + 1:02d}-{b // 12}.{b % 12 + 1:02d}")
            lines += [f"- {x}" for x in bullets]
    lines += ["", RESUME_HEADINGS[2]]
    field = FIELDS.get(family, "Business")
    birth = REFERENCE_YEAR - age
    inst = lambda: fam.institutions[int(g.integers(len(fam.institutions)))]  # noqa: E731
    if edu in ("Master's", "Professional degree", "Doctorate"):
        degree = {"Master's": f"Master's, {field}", "Professional degree": f"Professional degree, {field}",
                  "Doctorate": f"Doctorate (Ph.D.), {field}"}[edu]
        lines.append(f"{degree}, {inst()}, {birth + EDU_AGE[edu]}")
        lines.append(f"Bachelor's, {field}, {inst()}, {birth + 22}")
    elif edu == "Bachelor's":
        lines.append(f"Bachelor's, {field}, {inst()}, {birth + 22}")
    elif edu == "Associate's degree":
        lines.append(f"Associate's degree, {field}, {inst()}, {birth + 20}")
    elif edu == "Some college (no degree)":
        lines.append(f"Coursework in {field} (no degree), {inst()}, {birth + 18}-{birth + 19}")
    else:
        lines.append(f"High school diploma, {birth + 18}")
    return "\n".join(lines) + "\n"


def realise_all(profiles: pd.DataFrame, *, family_of: dict[str, str], seed: int) -> list[str]:
    """Resume text of every profile, in row order."""
    return [realise_resume(row, family=family_of[row["job_id"]], seed=seed) for _, row in profiles.iterrows()]
