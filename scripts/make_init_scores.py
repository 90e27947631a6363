"""Write ``runtime/init/score_file/scores.csv``: the made-up vendor export of the ``audit init`` score-file starter.

A fair system, seeded: 2 jobs x 20 base candidates x every variant of the starter's ``audit.yaml``,
scores on 0-100 (integers), ``is_true_match`` for 8 of the 20 candidates of each job.

- Each base candidate has a latent fit: matching candidates N(80, 7), the others N(52, 10), clipped
  to [0, 100]; matches score higher on average and the two groups overlap a little.
- Every variant of a candidate (the reference included) scores its fit plus its own noise N(0, 1.5),
  rounded to an integer: the vendor's system is not perfectly repeatable, and no variant, race or
  sex is treated differently. The audit of this file is expected to find no FAIL.

The file is committed; run this script only to regenerate it (it writes the same bytes each time):

    python scripts/make_init_scores.py
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "runtime" / "init" / "score_file" / "scores.csv"

SEED = 20261201
#: Job ids of the starter's ``jobs:``.
JOBS = ("data-analyst", "accountant")
#: Variant ids of the starter's ``variants.table`` (the reference first).
VARIANTS = ("white_male", "white_female", "black_male", "black_female")
BASE_PER_JOB = 20
MATCHING_PER_JOB = 8
MATCH_MEAN, MATCH_SD = 80.0, 7.0
OTHER_MEAN, OTHER_SD = 52.0, 10.0
NOISE_SD = 1.5


def _clip(x: float) -> int:
    return int(min(100, max(0, round(x))))


def rows(seed: int = SEED) -> list[str]:
    """The CSV lines (header first) of the starter's score file, drawn from ``seed``."""
    rng = random.Random(seed)
    out = ["job_id,cv_id,variant,score,is_true_match"]
    for job in JOBS:
        for i in range(1, BASE_PER_JOB + 1):
            match = i <= MATCHING_PER_JOB
            fit = rng.gauss(MATCH_MEAN, MATCH_SD) if match else rng.gauss(OTHER_MEAN, OTHER_SD)
            for variant in VARIANTS:
                out.append(f"{job},cand-{i:03d},{variant},{_clip(fit + rng.gauss(0.0, NOISE_SD))},{int(match)}")
    return out


def main(argv: list[str] | None = None) -> int:
    OUT.write_text("\n".join(rows()) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
