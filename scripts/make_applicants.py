"""Write ``specs/ll144/applicants.csv``: 5,000 synthetic historical applicants of an accounting screener, for
``specs/ll144-historical.yaml`` (issue 34). Seeded: the same seed writes the same bytes.

Shares among known categories follow BLS CPS 2022, Table 11 (household data, annual averages, employed
persons by detailed occupation, sex, race and Hispanic or Latino ethnicity), "Accountants and auditors"
(``../shared/data/bls/cps_aat11_target_occupations_2021_2022.csv``): women 58.8%; Hispanic or Latino 9.7%.
The CPS race shares (White 76.1, Black 9.7, Asian 11.7) count Hispanic people inside their race; converted
to the EEO-1 categories, where Hispanic or Latino is its own category, each race share is multiplied by
(1 - 0.097) = 0.903, and the 2.5% the CPS leaves to the other races (100 - 76.1 - 9.7 - 11.7) x 0.903 is
split equally among Native Hawaiian or Other Pacific Islander, American Indian or Alaska Native and Two or
More Races. Counts are allotted exactly (largest remainder), then shuffled.

Planted, so that the example's tables have something to show (documented, not measured):

- unknowns: 4% of applicants leave sex empty (label ""), 6% decline race/ethnicity (label "Declined"),
  drawn independently of everything else;
- selection ("advanced" = 1): 30% for men, 27% for women (impact ratio 0.9 by sex); by race/ethnicity the
  rate is multiplied by White 1.0, Black 0.75, Hispanic 0.85, Asian 1.05, others 0.9, unknown 1.0;
- two requisitions (ACC-2025-A: 60%, ACC-2025-B: 40%), application dates uniform over 2025.

Usage: ``python scripts/make_applicants.py [OUT] [--seed N] [--rows N]``.
"""

from __future__ import annotations

import argparse
import csv
import datetime
from pathlib import Path

import numpy as np

#: Shares among known sex (BLS CPS 2022 Table 11, accountants and auditors: 58.8% women).
SEX = {"F": 0.588, "M": 0.412}
_OTHER = (100 - 76.1 - 9.7 - 11.7) * 0.903 / 3
#: Shares (%) among known race/ethnicity, EEO-1 categories (the CPS converted as the docstring says).
RACE = {"Hispanic": 9.7, "White": 76.1 * 0.903, "Black": 9.7 * 0.903, "Asian": 11.7 * 0.903,
        "NHPI": _OTHER, "AIAN": _OTHER, "Two+": _OTHER}
SEX_UNKNOWN, RACE_UNKNOWN = 0.04, 0.06
RATE_SEX = {"M": 0.30, "F": 0.27, "": 0.285}
RATE_RACE = {"White": 1.0, "Black": 0.75, "Hispanic": 0.85, "Asian": 1.05, "NHPI": 0.9, "AIAN": 0.9, "Two+": 0.9,
             "Declined": 1.0}
REQUISITIONS = {"ACC-2025-A": 0.6, "ACC-2025-B": 0.4}


def allot(n: int, shares: dict[str, float]) -> list[str]:
    """``n`` labels in the given shares, exactly (largest remainder), in label order."""
    total = sum(shares.values())
    raw = {k: n * v / total for k, v in shares.items()}
    counts = {k: int(x) for k, x in raw.items()}
    for k in sorted(raw, key=lambda k: (counts[k] - raw[k], k))[: n - sum(counts.values())]:
        counts[k] += 1
    return [k for k, c in counts.items() for _ in range(c)]


def make(rows: int = 5000, seed: int = 20250101) -> list[dict[str, str]]:
    """The applicants, as the CSV's rows."""
    gen = np.random.default_rng(seed)
    n_sex_unknown, n_race_unknown = round(rows * SEX_UNKNOWN), round(rows * RACE_UNKNOWN)
    sex = np.array(allot(rows - n_sex_unknown, SEX) + [""] * n_sex_unknown)
    race = np.array(allot(rows - n_race_unknown, RACE) + ["Declined"] * n_race_unknown)
    gen.shuffle(sex)
    gen.shuffle(race)
    req = np.array(allot(rows, REQUISITIONS))
    gen.shuffle(req)
    start = datetime.date(2025, 1, 1)
    days = gen.integers(0, 365, rows)
    p = np.array([RATE_SEX[s] * RATE_RACE[r] for s, r in zip(sex, race)])
    advanced = (gen.random(rows) < p).astype(int)
    return [{"applicant_id": f"APP-{i + 1:05d}", "gender": s, "ethnicity": r, "advanced": str(a), "requisition": q,
             "applied_on": (start + datetime.timedelta(days=int(d))).isoformat()}
            for i, (s, r, a, q, d) in enumerate(zip(sex, race, advanced, req, days))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default=str(Path(__file__).resolve().parent.parent / "specs/ll144/applicants.csv"))
    ap.add_argument("--seed", type=int, default=20250101)
    ap.add_argument("--rows", type=int, default=5000)
    args = ap.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["applicant_id", "gender", "ethnicity", "advanced", "requisition",
                                           "applied_on"], lineterminator="\n")
        w.writeheader()
        w.writerows(make(args.rows, args.seed))


if __name__ == "__main__":
    main()
