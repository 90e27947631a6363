"""The ``applicants`` design (issue 34): nothing is generated; each system's file holds the employer's
historical applicants. Not storable, and its declaration's ``keeps_rows`` is False: no per-person row
is written into the run folder or kept in the task store."""

from __future__ import annotations

from runtime.designs import Design, design


@design("applicants")
class ApplicantsDesign(Design):
    """Historical applicants: no candidates to generate."""

    report_kind = "NYC Local Law 144 bias audit from historical applicants"
    storable = False

    def generate(self, ctx) -> None:
        ctx.candidates = None
