"""The ``python`` system: a vendor's Python function ``score_batch(items) -> {id: score}`` (issue 36 §3).

The function is called once per request batch in a child process of its own (this interpreter, started afresh
as a subprocess running :mod:`runtime.systems.pyrunner`'s text, which imports nothing of this tool), so vendor
code cannot touch the auditor's process. ``items`` are the ``command`` kind's request lines as dicts
(``id``, ``job``, ``resume``); the returned dict's entries are read as its answer lines. Batches, opaque ids,
timeout, concurrency, the answer cache and the exit-7 protocol errors are the ``command`` kind's
(:mod:`runtime.systems.command`); a function that raises stops the run naming the exception.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from compiler.systems.python_function import parse_function
from runtime.systems import system
from runtime.systems.base import ScoreRequest
from runtime.systems.command import ProgramAdapter, ProgramFailed

_AT = "system {system!r} ({kind}): plan task {task}: "
MSG_RAISED = (_AT + "{function} raised on request lines 1-{n} (request line 1: id {rid}): {last}. Every answer "
              "received so far is kept in the task store; re-run `audit execute --allow-exec` to continue from there")


@system("python")
class PythonSystem(ProgramAdapter):
    """Calls the vendor's function per request batch in a child process (module docstring)."""

    def command(self, request: ScoreRequest) -> list[str]:
        form, where, name = parse_function(self.resolved["function"])
        runner = (Path(__file__).with_name("pyrunner.py")).read_text(encoding="utf-8")
        return [sys.executable, "-c", runner, form, where, name]

    def program_name(self) -> str:
        return self.resolved["function"]

    def failure(self, template: str, fields: dict[str, Any]) -> ProgramFailed:
        from runtime.systems.command import MSG_EXIT

        if template is MSG_EXIT:
            return ProgramFailed(MSG_RAISED.format(function=self.resolved["function"], **fields))
        return super().failure(template, fields)
