"""Build the compact population tables shipped in ``runtime/generate/data/population/``.

Reads the reference extracts of ``../shared/data`` (see its README for provenance and licences) and
writes, for the population generator (seed 001 §4.1):

- ``occupations.json``: per template family, the BLS CPS Table 11 (2022 annual averages) share of
  women and race/ethnicity shares, and the O*NET "Required Level of Education" (RL) distribution
  mapped onto the seven education levels of seed 001 App. C.4;
- ``first_names.csv.gz``: SSA first names by birth decade (1950s-2000s) and sex, the 300 most common
  per decade x sex, with each name's share of its decade x sex births, plus the C.4 groupings
  (gender typicality over all kept decades, age typicality by birth cohort);
- ``surnames.csv.gz``: the Census 2010 top-1000 surnames with counts and race/ethnicity percentages
  ("(S)" cells filled by splitting the remaining percentage equally, as wru does).

    python scripts/build_population_tables.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "runtime" / "generate" / "data" / "population"

#: template family -> (BLS CPS Table 11 line, O*NET-SOC code whose RL distribution is used, note)
FAMILIES = {
    "data-analyst": ("Other mathematical science occupations", "15-2051.01",
                     "CPS has no data-scientist line; 15-2051 falls in 'Other mathematical science "
                     "occupations'. Education from 15-2051.01 Business Intelligence Analysts (O*NET 29.3)."),
    "software-developer": ("Software developers", "15-1132.00",
                           "Education from legacy 15-1132.00 Software Developers, Applications (O*NET 22.2)."),
    "registered-nurse": ("Registered nurses", "29-1141.00", "Education from 29-1141.00 (O*NET 29.3)."),
    "accountant": ("Accountants and auditors", "13-2011.01",
                   "Education from legacy 13-2011.01 Accountants (O*NET 22.2)."),
    "marketing-specialist": ("Market research analysts and marketing specialists", "13-1161.00",
                             "Education from 13-1161.00 (O*NET 29.3)."),
}
EDUCATION_LEVELS = ("High school graduate/GED", "Some college (no degree)", "Associate's degree",
                    "Bachelor's", "Master's", "Professional degree", "Doctorate")
#: O*NET RL category (1-12) -> index into EDUCATION_LEVELS
RL_TO_LEVEL = {1: 0, 2: 0, 3: 1, 4: 1, 5: 2, 6: 3, 7: 3, 8: 4, 9: 4, 10: 5, 11: 6, 12: 6}
DECADES = (1950, 1960, 1970, 1980, 1990, 2000)
TOP_NAMES = 300
#: seed 001 App. C.4 age-typicality cohorts (birth decades)
COHORTS = {"old": (1950, 1960, 1970), "mid": (1980,), "young": (1990, 2000)}


def _gz_csv(path: Path, header: list[str], rows: list[list]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    with open(path, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
        gz.write(buf.getvalue().encode("utf-8"))


def occupations(data: Path) -> dict:
    bls = {r["occupation"]: r for r in csv.DictReader(open(data / "bls/cps_aat11_target_occupations_2021_2022.csv"))
           if r["year"] == "2022"}
    rl: dict[str, dict[int, float]] = defaultdict(dict)
    releases = {}
    for r in csv.DictReader(open(data / "onet/education_training_experience.csv")):
        if r["Scale ID"] == "RL":
            rl[r["O*NET-SOC Code"]][int(r["Category"])] = float(r["Data Value"])
            releases[r["O*NET-SOC Code"]] = r["O*NET Release"]
    out = {}
    for fam, (line, code, note) in FAMILIES.items():
        b = bls[line]
        white, black, asian, hisp = (float(b[k]) for k in ("pct_white", "pct_black_or_african_american",
                                                            "pct_asian", "pct_hispanic_or_latino"))
        # CPS race groups overlap with Hispanic ethnicity; most Hispanic workers are counted White, so
        # non-Hispanic White ~ White - Hispanic. Other races are dropped and the four renormalised.
        raw = {"white": max(white - hisp, 0.0), "black": black, "asian": asian, "hispanic": hisp}
        tot = sum(raw.values())
        edu = [0.0] * len(EDUCATION_LEVELS)
        for cat, val in rl[code].items():
            edu[RL_TO_LEVEL[cat]] += val
        etot = sum(edu)
        out[fam] = {
            "bls_line": line, "bls_year": 2022, "total_employed_thousands": float(b["total_employed_thousands"]),
            "pct_women": float(b["pct_women"]),
            "race_shares": {k: round(v / tot, 6) for k, v in raw.items()},
            "onet_code": code, "onet_release": releases[code],
            "education_shares": {lv: round(v / etot, 6) for lv, v in zip(EDUCATION_LEVELS, edu)},
            "note": note,
        }
    return out


def first_names(data: Path) -> list[list]:
    counts: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)  # (name, sex) -> decade -> count
    totals: dict[tuple[int, str], int] = {}
    per: dict[tuple[int, str], list[tuple[int, str]]] = defaultdict(list)
    for r in csv.DictReader(open(data / "names/ssa_first_names_by_decade_sex_min1000.csv")):
        dec = int(r["decade"])
        if dec not in DECADES:
            continue
        c = int(r["count"])
        counts[(r["name"], r["sex"])][dec] = c
        totals[(dec, r["sex"])] = int(r["decade_sex_total_births_recorded"])
        per[(dec, r["sex"])].append((c, r["name"]))
    by_name: dict[str, dict] = defaultdict(lambda: {"F": 0, "M": 0, **{k: 0 for k in COHORTS}})
    for (name, sex), decs in counts.items():
        for dec, c in decs.items():
            by_name[name][sex] += c
            for coh, ds in COHORTS.items():
                if dec in ds:
                    by_name[name][coh] += c
    rows = []
    for (dec, sex), items in sorted(per.items()):
        items.sort(key=lambda t: (-t[0], t[1]))
        for c, name in items[:TOP_NAMES]:
            g = by_name[name]
            p_f = g["F"] / (g["F"] + g["M"])
            gender = "female-typical" if p_f > 0.75 else "male-typical" if p_f < 0.25 else "neutral"
            ctot = sum(g[k] for k in COHORTS)
            shares = {k: g[k] / ctot for k in COHORTS}
            top = max(shares, key=shares.get)
            age = top if shares[top] > 0.5 else "neutral"
            rows.append([dec, sex, name, round(c / totals[(dec, sex)], 8), round(p_f, 4), gender, age])
    return rows


def surnames(data: Path) -> list[list]:
    rows = []
    cols = ("pctwhite", "pctblack", "pctapi", "pcthispanic", "pctaian", "pct2prace")
    for r in csv.DictReader(open(data / "surnames/census2010_surnames_top1000_official.csv")):
        vals = {c: (None if r[c] == "(S)" else float(r[c])) for c in cols}
        missing = [c for c, v in vals.items() if v is None]
        if missing:
            rest = max(100.0 - sum(v for v in vals.values() if v is not None), 0.0)
            for c in missing:
                vals[c] = rest / len(missing)
        race = {"white": vals["pctwhite"], "black": vals["pctblack"], "asian": vals["pctapi"],
                "hispanic": vals["pcthispanic"]}
        top = max(race, key=race.get)
        group = top if race[top] > 50 else "neutral"
        rows.append([r["name"].title(), int(r["count"]), *(round(vals[c], 2) for c in cols[:4]), group])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    occ = occupations(args.data)
    doc = {"provenance": {
        "bls": "U.S. Bureau of Labor Statistics, CPS annual averages 2022, Table 11 (cpsaat11); public domain",
        "onet": "This product includes information from the O*NET 29.3 Database (and release 22.2 for legacy "
                "education rows) by the U.S. Department of Labor, Employment and Training Administration "
                "(USDOL/ETA). Used under the CC BY 4.0 license.",
        "education_mapping": "O*NET RL categories 1-2 -> HS/GED, 3-4 -> some college, 5 -> associate, 6-7 -> "
                             "bachelor's, 8-9 -> master's, 10 -> professional, 11-12 -> doctorate",
        "race_mapping": "non-Hispanic White approximated as pct_white - pct_hispanic; other races dropped; "
                        "the four groups renormalised",
        "built_by": "scripts/build_population_tables.py from ../shared/data (see its README)",
    }, "education_levels": list(EDUCATION_LEVELS), "occupations": occ}
    (OUT / "occupations.json").write_text(json.dumps(doc, indent=1) + "\n")
    _gz_csv(OUT / "first_names.csv.gz", ["decade", "sex", "name", "share", "p_female", "gender_group", "age_group"],
            first_names(args.data))
    _gz_csv(OUT / "surnames.csv.gz", ["surname", "count", "pctwhite", "pctblack", "pctapi", "pcthispanic",
                                      "race_group"], surnames(args.data))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
