"""Precomputed scores: a CSV produced by the system under test elsewhere (a vendor's export).

Paired designs (a correspondence-audit matrix): columns ``job_id, cv_id, variant, score`` and
optionally ``is_true_match`` (0/1). Unpaired designs (population profiles, seed 001): columns
``job_id, cv_id, score`` with the profile ids of ``profiles.csv``. Every problem is an
:class:`~compiler.errors.InputDataError` naming the file and the CSV line numbers (header = line 1).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

from compiler.errors import InputDataError
from runtime.systems import system
from runtime.systems.base import ScoreRequest, SystemAdapter

REQUIRED = ("job_id", "cv_id", "variant", "score")
OPTIONAL = ("is_true_match",)
MSG_PREFIX = "{file}: system {system!r}: "
MSG_COLUMNS_MISSING = "missing column(s) {missing}; required: {required} (optional: is_true_match)"
MSG_COLUMNS_UNKNOWN = "unknown column(s) {unknown}; allowed: {allowed}"
MSG_UNKNOWN_JOB = "unknown job_id {values} at {rows}; jobs in the spec: {allowed}"
MSG_UNKNOWN_VARIANT = "unknown variant {values} at {rows}; variants in the spec: {allowed}"
MSG_UNKNOWN_CV = "cv_id {values} at {rows} are not base candidates of the spec's generator"
MSG_SCORE_NAN = "score is empty or not a number at {rows}"
MSG_SCORE_RANGE = "score outside score_range [{lo}, {hi}] at {rows} (values {values})"
MSG_DUPLICATE = "duplicate (job_id, cv_id, variant) at {rows}"
MSG_MISSING_CELLS = "{n} missing (job_id, cv_id, variant) cell(s), e.g. {examples}; every base candidate needs a score under every variant"
MSG_MATCH_VALUES = "is_true_match must be 0 or 1 at {rows}"
MSG_EMPTY_KEY = "empty {column} at {rows}"
MSG_NO_ROWS = "the CSV has a header but no rows"
MSG_JOB_ABSENT = "job(s) {jobs} of the spec have no rows; every job needs a score for every base candidate and variant"
MSG_MATCH_INCONSISTENT = "is_true_match differs between variants of the same (job_id, cv_id) at {rows}"
MSG_MATCH_DISAGREES = "is_true_match disagrees with the generator's match flag at {rows}"
MSG_SCORES_HEADER = "{path}: a population score file needs the columns job_id, cv_id, score (got {cols})"
MSG_SCORES_ID = "{path}:{line}: unknown profile {cv!r} for job {job!r}; ids are <job id>-p00001 ... (see profiles.csv)"
MSG_SCORES_DUP = "{path}:{line}: profile {cv!r} of job {job!r} is scored twice (also line {first})"
MSG_SCORES_RANGE = "{path}:{line}: score {value!r} is not a number in score_range {rng}"
MSG_SCORES_MISSING = "{path}: {n} profiles have no score, e.g. {example}"


MSG_FIELDS = "line {line} has {n} field(s), the header has {m} ({header})"


def read_csv_records(path: Path) -> tuple[list[str], list[list[str]], list[int]]:
    """Header, records and each record's first line number (header = line 1), read with the csv
    module so that blank lines and quoted fields spanning several lines count as they do in an
    editor (``csv.reader.line_num``). Blank lines are skipped. Raises ``ValueError`` (with the line)
    for a record whose field count differs from the header's, ``OSError``/``UnicodeDecodeError``
    when the file cannot be read as UTF-8 text.
    """
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        header: list[str] | None = None
        records, lines = [], []
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if header is None:
                header = [c.strip() for c in row]
                continue
            if len(row) != len(header):
                raise ValueError(MSG_FIELDS.format(line=start, n=len(row), m=len(header), header=", ".join(header)))
            records.append(row)
            lines.append(start)
    return header or [], records, lines


def _rows(mask: pd.Series | np.ndarray, frame: pd.DataFrame, limit: int = 8) -> str:
    lines = frame["_line"].to_numpy()[np.asarray(mask)].tolist()
    shown = ", ".join(str(x) for x in lines[:limit])
    more = f" (and {len(lines) - limit} more)" if len(lines) > limit else ""
    return f"line{'s' if len(lines) > 1 else ''} {shown}{more}"


def _values(series: pd.Series, limit: int = 5) -> str:
    vals = list(dict.fromkeys(series.astype(str)))
    return ", ".join(repr(v) for v in vals[:limit]) + (" ..." if len(vals) > limit else "")


@system("precomputed")
class PrecomputedSystem(SystemAdapter):
    """Reads and checks a score CSV; scores stay on the system's own ``score_range``."""

    def score(self, request: ScoreRequest) -> pd.DataFrame:
        rel = self.resolved["data"]["path"]
        path = request.spec_folder / rel
        if not request.paired:  # population profiles (seed 001)
            out = read_population_scores(path, rel, request.resumes, tuple(self.resolved["score_range"]))
            request.info[self.id] = {"rows": int(len(out)), "file": rel}
            return out
        prefix = MSG_PREFIX.format(file=rel, system=self.id)

        def fail(msg: str) -> None:
            raise InputDataError(prefix + msg)

        try:
            # every cell as text, nothing turned into NaN: "NA" is a valid id, "" is an error we name;
            # each record keeps its own line number (blank lines and multi-line fields counted)
            header, records, lines = read_csv_records(path)
        except (OSError, ValueError, csv.Error) as err:
            fail(f"cannot read the CSV: {err}")
        df = pd.DataFrame(records, columns=header, dtype=object) if header else pd.DataFrame()
        if "_line" in df.columns:
            fail(MSG_COLUMNS_UNKNOWN.format(unknown="_line", allowed=", ".join(REQUIRED + OPTIONAL)))
        df["_line"] = lines if header else []
        missing = [c for c in REQUIRED if c not in df.columns]
        if missing:
            fail(MSG_COLUMNS_MISSING.format(missing=", ".join(missing), required=", ".join(REQUIRED)))
        unknown = [c for c in df.columns if c not in REQUIRED + OPTIONAL + ("_line",)]
        if unknown:
            fail(MSG_COLUMNS_UNKNOWN.format(unknown=", ".join(unknown), allowed=", ".join(REQUIRED + OPTIONAL)))
        if df.empty:
            fail(MSG_NO_ROWS)
        for col in ("job_id", "cv_id", "variant"):
            df[col] = df[col].str.strip()
            bad = df[col] == ""
            if bad.any():
                fail(MSG_EMPTY_KEY.format(column=col, rows=_rows(bad, df)))
        bad = ~df["job_id"].isin(list(request.jobs))
        if bad.any():
            fail(MSG_UNKNOWN_JOB.format(values=_values(df.loc[bad, "job_id"]), rows=_rows(bad, df),
                                        allowed=", ".join(request.jobs)))
        bad = ~df["variant"].isin(request.variants)
        if bad.any():
            fail(MSG_UNKNOWN_VARIANT.format(values=_values(df.loc[bad, "variant"]), rows=_rows(bad, df),
                                            allowed=", ".join(request.variants)))
        absent = [j for j in request.jobs if j not in set(df["job_id"])]
        if absent:
            fail(MSG_JOB_ABSENT.format(jobs=", ".join(absent)))
        score = pd.to_numeric(df["score"].str.strip(), errors="coerce")
        bad = score.isna() | ~np.isfinite(score.fillna(0))
        if bad.any():
            fail(MSG_SCORE_NAN.format(rows=_rows(bad, df)))
        lo, hi = self.resolved["score_range"]
        bad = (score < lo) | (score > hi)
        if bad.any():
            fail(MSG_SCORE_RANGE.format(lo=lo, hi=hi, rows=_rows(bad, df), values=_values(df.loc[bad, "score"])))
        df["score"] = score.astype(float)
        dup = df.duplicated(["job_id", "cv_id", "variant"], keep=False)
        if dup.any():
            fail(MSG_DUPLICATE.format(rows=_rows(dup, df)))
        gen = request.resumes
        if gen is not None:
            known = set(zip(gen["job_id"], gen["cv_id"]))
            bad = ~pd.Series([(j, c) in known for j, c in zip(df["job_id"], df["cv_id"])], index=df.index)
            if bad.any():
                fail(MSG_UNKNOWN_CV.format(values=_values(df.loc[bad, "cv_id"]), rows=_rows(bad, df)))
            bases = gen[["job_id", "cv_id"]].drop_duplicates()
        else:
            bases = df[["job_id", "cv_id"]].drop_duplicates()
        full = bases.merge(pd.DataFrame({"variant": request.variants}), how="cross")
        have = full.merge(df[["job_id", "cv_id", "variant"]], how="left", indicator=True)
        gaps = have[have["_merge"] == "left_only"]
        if len(gaps):
            ex = "; ".join(f"({r.job_id}, {r.cv_id}, {r.variant})" for r in gaps.head(5).itertuples())
            fail(MSG_MISSING_CELLS.format(n=len(gaps), examples=ex))
        if "is_true_match" in df.columns:
            m = df["is_true_match"].str.strip().map({"0": 0, "1": 1})
            bad = ~m.isin([0, 1])
            if bad.any():
                fail(MSG_MATCH_VALUES.format(rows=_rows(bad, df)))
            df["is_true_match"] = m.astype(int)
            nun = df.groupby(["job_id", "cv_id"])["is_true_match"].transform("nunique")
            if (nun > 1).any():
                fail(MSG_MATCH_INCONSISTENT.format(rows=_rows(nun > 1, df)))
            if gen is not None:
                g = gen.drop_duplicates(["job_id", "cv_id"]).set_index(["job_id", "cv_id"])["is_true_match"]
                theirs = pd.Series(list(zip(df["job_id"], df["cv_id"]))).map(g).to_numpy()
                bad = pd.Series(theirs != df["is_true_match"].to_numpy(), index=df.index)
                if bad.any():
                    fail(MSG_MATCH_DISAGREES.format(rows=_rows(bad, df)))
        elif gen is not None:
            g = gen.drop_duplicates(["job_id", "cv_id"]).set_index(["job_id", "cv_id"])["is_true_match"]
            df["is_true_match"] = pd.Series(list(zip(df["job_id"], df["cv_id"]))).map(g).to_numpy()
        else:
            df["is_true_match"] = np.nan
        request.info[self.id] = {"rows": int(len(df)), "file": rel}
        return df[["job_id", "cv_id", "variant", "score", "is_true_match"]].reset_index(drop=True)


def read_population_scores(path: Path, shown: str, profiles: pd.DataFrame,
                           score_range: tuple[float, float]) -> pd.DataFrame:
    """A precomputed system's scores of the profiles: CSV ``job_id, cv_id, score`` (header = line 1)."""
    try:
        cols, records, lines = read_csv_records(path)
    except (OSError, ValueError, csv.Error) as err:
        raise InputDataError(f"{shown}: cannot read the CSV: {err}") from None
    rows = [dict(zip(cols, rec)) for rec in records]
    if not {"job_id", "cv_id", "score"} <= set(cols):
        raise InputDataError(MSG_SCORES_HEADER.format(path=shown, cols=", ".join(cols) or "none"))
    known = set(zip(profiles["job_id"], profiles["cv_id"]))
    seen: dict[tuple[str, str], int] = {}
    lo, hi = score_range
    out = []
    for i, r in zip(lines, rows):
        key = (r["job_id"], r["cv_id"])
        if key not in known:
            raise InputDataError(MSG_SCORES_ID.format(path=shown, line=i, cv=r["cv_id"], job=r["job_id"]))
        if key in seen:
            raise InputDataError(MSG_SCORES_DUP.format(path=shown, line=i, cv=r["cv_id"], job=r["job_id"], first=seen[key]))
        seen[key] = i
        try:
            s = float(r["score"])
        except ValueError:
            s = float("nan")
        if not (np.isfinite(s) and lo <= s <= hi):
            raise InputDataError(MSG_SCORES_RANGE.format(path=shown, line=i, value=r["score"], rng=[lo, hi]))
        out.append((r["job_id"], r["cv_id"], s))
    missing = known - set(seen)
    if missing:
        raise InputDataError(MSG_SCORES_MISSING.format(path=shown, n=len(missing), example=sorted(missing)[0][1]))
    return pd.DataFrame(out, columns=["job_id", "cv_id", "score"])
