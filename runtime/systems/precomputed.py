"""Precomputed scores: a CSV produced by the system under test elsewhere (a vendor's export).

Paired designs (a correspondence-audit matrix): columns ``job_id, cv_id, variant, score`` and
optionally ``is_true_match`` (0/1). Unpaired designs (population profiles, seed 001): columns
``job_id, cv_id, score`` with the profile ids of ``profiles.csv``. Every problem is an
:class:`~compiler.errors.InputDataError` naming the file and the CSV line numbers (header = line 1).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from compiler.errors import InputDataError, LockError
from compiler.score_file import (FileMapping, lines_text, missing_cells, parse_number, read_blind_scores,
                                 read_csv_records, read_score_file, values_text)
from runtime.systems import system
from runtime.systems.base import ScoreRequest, SystemAdapter

MSG_PREFIX = "{file}: system {system!r}: "
MSG_BLIND_CHANGED = ("{file}: system {system!r}: the vendor's returned file changed since it was first read on {at} "
                     "(sha256 {old} -> {new}). The scores are data of the pre-registered audit: restore the file, or "
                     "use this one with `audit execute --accept-vendor-file \"REASON\"`, which records the change, "
                     "both digests and the reason in the run and its report")
MSG_BLIND_ABSENT = ("{file}: system {system!r} is blind and its file is not there yet: export the résumés with "
                    "`audit export SPEC --for-vendor DIR`, have the vendor score them, and save their "
                    "resume_id,score file as {file}")
MSG_UNKNOWN_CV = "cv_id {values} at {rows} are not base candidates of the spec's generator"
MSG_MATCH_DISAGREES = "is_true_match disagrees with the generator's match flag at {rows}"
MSG_SCORES_HEADER = "{path}: a population score file needs the columns job_id, cv_id, score (got {cols})"
MSG_SCORES_ID = "{path}:{line}: unknown profile {cv!r} for job {job!r}; ids are <job id>-p00001 ... (see profiles.csv)"
MSG_SCORES_DUP = "{path}:{line}: profile {cv!r} of job {job!r} is scored twice (also line {first})"
MSG_SCORES_RANGE = "{path}:{line}: score {value!r} is not a number in score_range {rng}"
MSG_SCORES_NAN = ("{path}:{line}: score {value!r} (column 'score') is not a number; a score is written with ASCII "
                  "digits as [+-]digits[.digits][e[+-]digits], e.g. 72, 0.85 or -1.5e-3")
MSG_SCORES_MISSING = "{path}: {n} profiles have no score, e.g. {example}"


@system("precomputed")
class PrecomputedSystem(SystemAdapter):
    """Reads and checks a score CSV; scores stay on the system's own ``score_range``."""

    @property
    def storable(self) -> bool:  # type: ignore[override]
        """A blind file is not part of the lock, so its scores are never taken from the task store."""
        return not self.resolved.get("blind")

    def batch_inputs(self) -> list:
        """None: a score file is not batched; :meth:`finish` reads it on the driver."""
        return []

    def finish(self, results) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The score file's rows, checked (every problem at once), and its diagnostics (rows, file, delimiter,
        columns read, blind key); the placebo rows of negative controls go to ``artifacts["controls:<id>"]``.

        Raises
        ------
        compiler.errors.InputDataError
            The file does not fit the generated résumés or the spec (exit 2, every problem listed).
        """
        request = self.request
        rel = self.resolved["data"]["path"]
        path = request.spec_folder / rel
        if not request.paired:  # population profiles (seed 001)
            out = read_population_scores(path, rel, request.resumes, tuple(self.resolved["score_range"]))
            return out, {"rows": int(len(out)), "file": rel}
        prefix = MSG_PREFIX.format(file=rel, system=self.id)
        gen = request.resumes
        blind = None
        if self.resolved.get("blind"):
            found, blind = self._read_blind(request, path, rel)
        else:
            # the same reader and checks as `audit validate` (compiler.score_file): every problem at once
            found = read_score_file(path, jobs=list(request.jobs), variants=list(request.variants),
                                    score_range=tuple(self.resolved["score_range"]),
                                    columns=self.resolved.get("columns"), delimiter=self.resolved.get("delimiter"),
                                    key=f"systems[id={self.id}]", controls=list(request.controls),
                                    file_mapping=FileMapping.of(self.resolved), table=request.variant_table)
        problems = list(found.problems)
        if not problems and gen is not None:
            known = set(zip(gen["job_id"], gen["cv_id"]))
            bad = [r for r in found.rows if (r["job_id"], r["cv_id"]) not in known]
            if bad:
                problems.append(MSG_UNKNOWN_CV.format(values=values_text(r["cv_id"] for r in bad),
                                                      rows=lines_text([r["line"] for r in bad])))
            flags = gen.drop_duplicates(["job_id", "cv_id"]).set_index(["job_id", "cv_id"])["is_true_match"].to_dict()
            bad = [r for r in found.rows if r["is_true_match"] is not None
                   and (r["job_id"], r["cv_id"]) in flags and flags[(r["job_id"], r["cv_id"])] != r["is_true_match"]]
            if bad:
                problems.append(MSG_MATCH_DISAGREES.format(rows=lines_text([r["line"] for r in bad])))
            if not problems:  # bases come from the generator: every one needs every variant
                gap = missing_cells(list(dict.fromkeys(zip(gen["job_id"], gen["cv_id"]))), request.variants,
                                    found.rows)
                if gap:
                    problems.append(gap)
        if problems:
            raise InputDataError(prefix + ("\n  - ".join([""] + problems) if len(problems) > 1 else problems[0]))
        df = pd.DataFrame(found.rows, columns=["job_id", "cv_id", "variant", "score", "is_true_match", "line"])
        df["score"] = df["score"].astype(float)
        if gen is not None and df["is_true_match"].isna().all():
            g = gen.drop_duplicates(["job_id", "cv_id"]).set_index(["job_id", "cv_id"])["is_true_match"]
            df["is_true_match"] = pd.Series(list(zip(df["job_id"], df["cv_id"]))).map(g).to_numpy()
        elif df["is_true_match"].isna().all():
            df["is_true_match"] = np.nan
        else:
            df["is_true_match"] = df["is_true_match"].astype(int)
        if request.controls:  # issue 38 §3: the placebo rows leave the variants' frame
            placebo = df["variant"].isin(request.controls).to_numpy()
            request.artifacts[f"controls:{self.id}"] = df.loc[placebo, ["job_id", "cv_id", "variant", "score",
                                                                        "is_true_match"]].reset_index(drop=True)
            df = df.loc[~placebo].reset_index(drop=True)
        info = {"rows": int(len(df)), "file": rel, "delimiter": found.delimiter,
                "columns": found.mapping, **({"read_as": found.read_as} if found.read_as else {}),
                **({"blind": blind} if blind else {})}
        return df[["job_id", "cv_id", "variant", "score", "is_true_match"]].reset_index(drop=True), info


    def _blind_key(self, request: ScoreRequest) -> tuple[str, pd.DataFrame]:
        from runtime.blind import MSG_NO_KEY, load_key

        from runtime.blind import blind_candidates

        found = load_key(request.store, blind_candidates(request.resumes, request.control_resumes))
        if found is None:
            root = getattr(request.store, "root", None)
            raise InputDataError(MSG_NO_KEY.format(system=self.id, store=root))
        return found

    def _read_blind(self, request: ScoreRequest, path: Path, rel: str) -> tuple[Any, dict[str, Any]]:
        """The vendor's ``resume_id, score`` file read back through the export's key (issue 15); the key is
        sealed into the run as ``blind_key.csv`` and the file's sha256 recorded in ``run.json``."""
        import hashlib

        if not path.is_file():
            raise InputDataError(MSG_BLIND_ABSENT.format(file=rel, system=self.id))
        kid, key = self._blind_key(request)
        found = read_blind_scores(path, key={r.resume_id: (r.job_id, r.cv_id, r.variant)
                                             for r in key.itertuples(index=False)},
                                  score_range=tuple(self.resolved["score_range"]),
                                  columns=self.resolved.get("columns"), delimiter=self.resolved.get("delimiter"))
        data = path.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        request.artifacts["blind_key.csv"] = key
        sealed = f"blind_scores_{self.id}.csv"
        request.artifacts[sealed] = data  # the returned file itself, byte for byte, sealed into the run
        info = {"key": kid, "key_file": "blind_key.csv", "resumes": int(len(key)), "file_sha256": sha,
                "sealed_file": sealed}
        if not found.problems:
            info["history"] = self._bind_returned(request, kid, rel, sha)
        return found, info

    def _bind_returned(self, request: ScoreRequest, kid: str, rel: str, sha: str) -> list[dict[str, Any]]:
        """The first returned file read is bound (its sha256 kept beside the key in the task store); a later,
        different file is refused unless accepted with a reason, which is appended to the history that every
        later run and report shows. Returns the history, oldest first."""
        import json

        from compiler.lock import utc_now

        hid = f"{kid}-returned-{self.id}"
        stored = request.store.get(hid) if request.store is not None else None
        history = json.loads(stored["history"]) if stored else []
        if history and history[-1]["sha256"] != sha:
            if not (request.accept_vendor_file or "").strip():
                raise LockError(MSG_BLIND_CHANGED.format(file=rel, system=self.id, at=history[-1]["read_at"],
                                                         old=history[-1]["sha256"], new=sha))
            history.append({"sha256": sha, "read_at": utc_now(), "reason": request.accept_vendor_file.strip()})
        elif not history:
            history.append({"sha256": sha, "read_at": utc_now(), "reason": "first returned file"})
        else:
            return history
        if request.store is not None:
            request.store.put(hid, "blind_returned", {"history": json.dumps(history, indent=1).encode()},
                              key={"key": kid, "system": self.id})
        return history


def read_population_scores(path: Path, shown: str, profiles: pd.DataFrame,
                           score_range: tuple[float, float]) -> pd.DataFrame:
    """A precomputed system's scores of the profiles: CSV ``job_id, cv_id, score`` (header = line 1)."""
    try:
        cols, records, lines, _ = read_csv_records(path, ",")
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
        s = parse_number(r["score"])  # the strict form of a number (issue 41): no 4_5, no ٤٥
        if s is None:
            raise InputDataError(MSG_SCORES_NAN.format(path=shown, line=i, value=r["score"]))
        if not lo <= s <= hi:
            raise InputDataError(MSG_SCORES_RANGE.format(path=shown, line=i, value=r["score"], rng=[lo, hi]))
        out.append((r["job_id"], r["cv_id"], s))
    missing = known - set(seen)
    if missing:
        raise InputDataError(MSG_SCORES_MISSING.format(path=shown, n=len(missing), example=sorted(missing)[0][1]))
    return pd.DataFrame(out, columns=["job_id", "cv_id", "score"])
