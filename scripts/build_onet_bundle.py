"""Build the O*NET package data of the template generator (issue 32 §1) from the O*NET 29.3 tables.

Reads ``../shared/data/onet-all/*.csv.gz`` (O*NET 29.3 Database, May 2025 release, USDOL/ETA, CC BY 4.0;
provenance and sha256 in that folder's README) and writes ``compiler/onet/*.csv.gz``: only the columns the
generator and the validation read, one row per fact, sorted, gzip with a fixed mtime so that a rebuild writes
the same bytes.

Usage::

    python scripts/build_onet_bundle.py [--source ../shared/data/onet-all] [--out compiler/onet]

Tables written (columns):

- ``occupations.csv.gz``: ``code, title, job_zone`` (1-5; empty where O*NET gives none), every O*NET-SOC code;
- ``tasks.csv.gz``: ``code, task_id, task, task_type`` (Core / Supplemental), from Task Statements;
- ``technology.csv.gz``: ``code, example, hot`` (Y/N Hot Technology), from Technology Skills;
- ``skills.csv.gz`` and ``knowledge.csv.gz``: ``code, element, importance`` (the IM scale, 1-5), rows that
  O*NET does not recommend suppressing, the 12 most important per occupation;
- ``education.csv.gz``: ``code, category, share`` (Required Level of Education, RL categories 1-12, % of
  respondents);
- ``titles.csv.gz``: ``code, title, source`` (``reported``: Sample of Reported Titles; ``alternate``:
  Alternate Titles of at most 40 characters), duplicates within a code dropped.
"""

from __future__ import annotations

import argparse
import gzip
import io
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "onet-all"
CODE = "O*NET-SOC Code"
#: Skills and knowledge areas kept per occupation: the most important (IM scale), ties by name.
TOP_RATED = 12


def _read(source: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(source / f"{name}.csv.gz", dtype=str, keep_default_na=False)


def _write(frame: pd.DataFrame, path: Path) -> int:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(frame.to_csv(index=False, lineterminator="\n").encode("utf-8"))
    path.write_bytes(buf.getvalue())
    return len(buf.getvalue())


def build(source: Path, out: Path) -> dict[str, int]:
    """Write every table; return ``{file name: bytes}``."""
    occ = _read(source, "occupation_data")[[CODE, "Title"]]
    zones = _read(source, "job_zones")[[CODE, "Job Zone"]]
    occ = occ.merge(zones, on=CODE, how="left").fillna("")
    occ.columns = ["code", "title", "job_zone"]

    tasks = _read(source, "task_statements")[[CODE, "Task ID", "Task", "Task Type"]]
    tasks.columns = ["code", "task_id", "task", "task_type"]
    tasks = tasks.assign(task_id=tasks["task_id"].astype(int)).sort_values(["code", "task_id"])

    tech = _read(source, "technology_skills")[[CODE, "Example", "Hot Technology"]]
    tech.columns = ["code", "example", "hot"]
    tech = tech.drop_duplicates(["code", "example"]).sort_values(["code", "example"])

    def rated(name: str) -> pd.DataFrame:
        t = _read(source, name)
        t = t[(t["Scale ID"] == "IM") & (t["Recommend Suppress"] != "Y")][[CODE, "Element Name", "Data Value"]]
        t.columns = ["code", "element", "importance"]
        t = t.assign(_im=t["importance"].astype(float)).sort_values(["code", "_im", "element"],
                                                                     ascending=[True, False, True])
        return t.groupby("code").head(TOP_RATED).drop(columns="_im").sort_values(["code", "element"])

    edu = _read(source, "education_training_experience")
    edu = edu[edu["Scale ID"] == "RL"][[CODE, "Category", "Data Value"]]
    edu.columns = ["code", "category", "share"]
    edu = edu.assign(category=edu["category"].astype(int)).sort_values(["code", "category"])

    rep = _read(source, "sample_of_reported_titles")[[CODE, "Reported Job Title"]]
    rep.columns = ["code", "title"]
    alt = _read(source, "alternate_titles")[[CODE, "Alternate Title"]]
    alt.columns = ["code", "title"]
    alt = alt[alt["title"].str.len() <= 40]
    titles = pd.concat([rep.assign(source="reported"), alt.assign(source="alternate")], ignore_index=True)
    titles = titles[titles["title"].str.strip() != ""]
    titles = titles.assign(key=titles["title"].str.lower()).drop_duplicates(["code", "key"]).drop(columns="key")

    out.mkdir(parents=True, exist_ok=True)
    tables = {"occupations": occ, "tasks": tasks, "technology": tech, "skills": rated("skills"),
              "knowledge": rated("knowledge"), "education": edu, "titles": titles}
    return {f"{name}.csv.gz": _write(frame.reset_index(drop=True), out / f"{name}.csv.gz")
            for name, frame in tables.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--out", type=Path, default=ROOT / "compiler" / "onet")
    args = parser.parse_args()
    sizes = build(args.source, args.out)
    for name, size in sizes.items():
        print(f"{name:24s} {size:>9,d} bytes")
    print(f"{'total':24s} {sum(sizes.values()):>9,d} bytes")


if __name__ == "__main__":
    main()
