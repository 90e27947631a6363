"""Build the name tables of name cues with a measured signal (issue 32 §3) from ``../shared/data``.

Reads the SSA first names by birth decade and sex (``names/ssa_first_names_by_decade_sex_min1000.csv``: SSA
national baby names, births 1880-2023, public domain; decade x sex counts >= 1000) and the Census 2010
surnames with race/ethnicity shares (``surnames/census2010_surnames_top20000_race_pct.csv``: the first 20,000
surnames of the Census 2010 list, percentages from the wru package's copy, public domain data), and writes
``compiler/names/*.csv.gz`` with a fixed gzip mtime (a rebuild writes the same bytes):

- ``first_names.csv.gz``: ``decade, name, female, male`` (births in the decade, 1950s-2000s; a name/sex cell
  under 1,000 births in the source is 0 here);
- ``surnames.csv.gz``: ``rank, surname, white, black, asian, hispanic`` (Census list position; % of people with
  the surname who are non-Hispanic White, non-Hispanic Black, non-Hispanic Asian/NHPI, Hispanic).

Usage: ``python scripts/build_names_bundle.py [--source ../shared/data] [--out compiler/names]``
"""

from __future__ import annotations

import argparse
import gzip
import io
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DECADES = (1950, 1960, 1970, 1980, 1990, 2000)


def _write(frame: pd.DataFrame, path: Path) -> int:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(frame.to_csv(index=False, lineterminator="\n").encode("utf-8"))
    path.write_bytes(buf.getvalue())
    return len(buf.getvalue())


def build(source: Path, out: Path) -> dict[str, int]:
    ssa = pd.read_csv(source / "names" / "ssa_first_names_by_decade_sex_min1000.csv")
    ssa = ssa[ssa["decade"].isin(DECADES)]
    first = ssa.pivot_table(index=["decade", "name"], columns="sex", values="count", aggfunc="sum", fill_value=0)
    first = first.reset_index().rename(columns={"F": "female", "M": "male"})[["decade", "name", "female", "male"]]
    first = first.sort_values(["decade", "name"]).astype({"female": int, "male": int})
    sur = pd.read_csv(source / "surnames" / "census2010_surnames_top20000_race_pct.csv")
    sur = sur.rename(columns={"census_list_position": "rank", "pctwhite": "white", "pctblack": "black",
                              "pctapi": "asian", "pcthispanic": "hispanic"})
    sur = sur[["rank", "surname", "white", "black", "asian", "hispanic"]].sort_values("rank")
    out.mkdir(parents=True, exist_ok=True)
    return {"first_names.csv.gz": _write(first, out / "first_names.csv.gz"),
            "surnames.csv.gz": _write(sur, out / "surnames.csv.gz")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "compiler" / "names")
    args = parser.parse_args()
    for name, size in build(args.source, args.out).items():
        print(f"{name:22s} {size:>9,d} bytes")


if __name__ == "__main__":
    main()
