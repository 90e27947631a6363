"""Historical applicants read from the employer's file (the ``applicant_file`` kind; issue 34).

Not a scorer: the file holds each applicant's sex, race/ethnicity and the tool's outcome. The rows
are personal data (GDPR Art. 9): they are read into memory, checked with the reader ``audit validate``
uses (:func:`compiler.applicants.read_applicant_file`), handed to the ``ll144`` family and never
written: the adapter is not storable (nothing of it enters ``.audit-store/``), and ``run.json`` gets the
file's sha256 and row count only.
"""

from __future__ import annotations

import datetime
from typing import Any

import pandas as pd

from compiler.applicants import read_applicant_file
from compiler.errors import InputDataError
from runtime.systems import system
from runtime.systems.base import SystemAdapter

MSG_PREFIX = "{file}: system {system!r}: "
#: The columns of the frame :meth:`ApplicantFileSystem.finish` returns (in memory only).
COLUMNS = ("job_id", "cv_id", "score", "selected", "sex", "race_ethnicity")


@system("applicant_file")
class ApplicantFileSystem(SystemAdapter):
    """Reads and checks an applicant file; its rows stay in memory."""

    storable = False

    def batch_inputs(self) -> list:
        """None: an applicant file is not batched; :meth:`finish` reads it on the driver."""
        return []

    def finish(self, results) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The applicants of the file, and the diagnostics (file, sha256, rows, groups, delimiter, columns,
        retention).

        Returns
        -------
        (pandas.DataFrame, dict)
            :data:`COLUMNS`: ``job_id`` the group (``ALL`` without a group column), ``cv_id`` the applicant id
            (never written), ``score`` the tool's score (its own scale) or the selection as 1.0/0.0,
            ``selected`` 1.0/0.0 (NaN under ``outcome: score``), ``sex`` and ``race_ethnicity`` category ids; and the diagnostics.

        Raises
        ------
        compiler.errors.InputDataError
            Every problem of the file at once, naming its CSV lines (exit 2).
        """
        r, request = self.resolved, self.request
        rel = r["data"]["path"]
        data = (request.disclosure or {}).get("data") or {}
        dates = (datetime.date.fromisoformat(data["from"]), datetime.date.fromisoformat(data["to"])) \
            if data.get("from") and data.get("to") else None
        rng = tuple(r["score_range"]) if r["outcome"] == "score" else None
        found = read_applicant_file(request.spec_folder / rel, outcome=r["outcome"], labels=r["labels"], score_range=rng,
                                    columns=r.get("columns"), delimiter=r.get("delimiter"), dates=dates)
        if found.problems:
            prefix = MSG_PREFIX.format(file=rel, system=self.id)
            raise InputDataError(prefix + ("\n  - ".join([""] + found.problems) if len(found.problems) > 1
                                           else found.problems[0]))
        df = pd.DataFrame(found.rows)
        out = pd.DataFrame({"job_id": df["group"], "cv_id": df["id"], "score": df["score"].astype(float),
                            "selected": df["selected"].astype(float) if r["outcome"] == "selected" else float("nan"),
                            "sex": df["sex"], "race_ethnicity": df["race_ethnicity"]})
        info = {"file": rel, "file_sha256": found.sha256, "rows": int(len(out)),
                                 "groups": int(out["job_id"].nunique()), "delimiter": found.delimiter,
                                 "columns": found.mapping, "retention_days": int(r["retention_days"]),
                                 "personal_rows_kept": 0}
        return out[list(COLUMNS)], info
