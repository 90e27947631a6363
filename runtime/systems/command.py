"""The ``command`` system: a vendor's command-line scorer as a system under test (issue 36 §2).

Per request batch (:mod:`runtime.systems.requests`: opaque ids in the request key's order, ``batch_size`` per
batch, inside one plan score batch) ``argv`` runs once, in the spec's folder, never through a shell. stdin holds
one JSON line per résumé, ``{"id": "R…", "job": "<description text>", "resume": "<text>"}``; stdout must hold one
line ``{"id": "R…", "score": <number or string>}`` per request line, in any order. stderr is kept
(``stderr_<system>.txt`` in the run folder). Scores are read by :func:`runtime.systems.answers.score_value`; an
invalid one is an invalid answer (``answers_<system>.csv``), asked again only ``max_invalid_retries`` times.

A run of the program that breaks the protocol (a non-zero exit, no answer within ``timeout_s``, a stdout line
that is not a JSON object with an id, an id missing, unknown or answered twice) stops the run with exit 7
(:class:`ProgramFailed`) naming the system, the plan task, the request line and its id, and stderr's last line.
Each run's answer is stored on arrival in the task store (``<kind>-<sha256>`` of the fingerprint, the stdin
bytes and the attempt), so a re-run and ``--resume`` start no process for an answered batch.
``execution.systems.<id>``: ``timeout_s`` per batch (default 60), ``concurrency`` (processes at once, default 1).
Running vendor code needs ``audit execute --allow-exec`` (checked before any work, :mod:`runtime.pipeline.start`).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from compiler.errors import AuditError
from runtime.systems import system
from runtime.systems.base import ScoreRequest
from runtime.systems.requests import ANSWER_COLUMNS, Item, RequestAdapter

#: Settings of ``execution.systems.<id>`` when the spec gives none (``requests_per_s`` and ``retries`` are http's).
DEFAULT_SETTINGS = {"concurrency": 1, "timeout_s": 60.0}

_AT = "system {system!r} ({kind}): plan task {task}: "
_THEN = ("; stderr's last line: {last}. Every answer received so far is kept in the task store; re-run "
         "`audit execute --allow-exec` to continue from there")
MSG_EXIT = _AT + "{program} exited with status {code} on request lines 1-{n} (request line 1: id {rid})" + _THEN
MSG_TIMEOUT = (_AT + "{program} gave no answer within timeout_s {timeout:g} s to request lines 1-{n} (request line 1: "
               "id {rid}) and was stopped" + _THEN)
MSG_NOT_JSON = _AT + "stdout line {k} is not a JSON object with an id: {text!r}" + _THEN
MSG_UNKNOWN_ID = _AT + "stdout line {k} answers id {id!r}, which no request line of this batch carries" + _THEN
MSG_DUPLICATE_ID = _AT + "request line {n} (id {rid}) is answered more than once (stdout lines {a} and {b})" + _THEN
MSG_MISSING_ID = _AT + "request line {n} (id {rid}) has no answer on stdout ({k} of {m} request lines answered)" + _THEN
#: stderr's last line when the program wrote nothing there.
NO_STDERR = "(empty)"


class ProgramFailed(AuditError):
    """A vendor's program or function broke the protocol (exit 7): neither a bug of the tool nor a finding.
    Every answer received before is kept in the task store; a re-run continues."""

    exit_code = 7


@dataclass
class ProcessCounters:
    """``run.json`` ``systems_info.<id>.processes``: programs ``started``, batches answered ``from_cache``,
    ``invalid`` item answers."""

    started: int = 0
    from_cache: int = 0
    invalid: int = 0


def last_line(stderr: bytes) -> str:
    """stderr's last non-empty line (at most 500 characters), or :data:`NO_STDERR`."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", errors="replace").splitlines() if ln.strip()]
    return lines[-1][:500] if lines else NO_STDERR


def stdin_bytes(items: list[Item], job_text: str) -> bytes:
    """The request lines of a batch: one JSON object ``{"id", "job", "resume"}`` per item, UTF-8, ``\\n`` ended."""
    return "".join(json.dumps({"id": it.rid, "job": job_text, "resume": it.text}, ensure_ascii=False) + "\n"
                   for it in items).encode("utf-8")


def read_stdout(stdout: bytes, items: list[Item]) -> tuple[dict[str, Any], tuple[str, dict[str, Any]] | None]:
    """Each item's answer (the value of ``score``, None when absent) and the first protocol error.

    Returns
    -------
    (dict, tuple or None)
        ``rid -> (score value, raw line)``, and ``(message template, fields)`` of the first protocol error
        (a line that is not a JSON object with an id, an unknown id, an id answered twice, an id not
        answered), or None.
    """
    line_of = {it.rid: n for n, it in enumerate(items, start=1)}
    got: dict[str, tuple[Any, str]] = {}
    seen_at: dict[str, int] = {}
    lines = stdout.decode("utf-8", errors="replace").splitlines()
    for k, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        if not isinstance(obj, dict) or obj.get("id") is None:
            return got, (MSG_NOT_JSON, {"k": k, "text": text[:200]})
        rid = str(obj["id"])
        if rid not in line_of:
            return got, (MSG_UNKNOWN_ID, {"k": k, "id": rid})
        if rid in seen_at:
            return got, (MSG_DUPLICATE_ID, {"n": line_of[rid], "rid": rid, "a": seen_at[rid], "b": k})
        seen_at[rid] = k
        got[rid] = (obj.get("score"), text.strip()[:2000])
    for it in items:
        if it.rid not in got:
            return got, (MSG_MISSING_ID, {"n": line_of[it.rid], "rid": it.rid, "k": len(got), "m": len(items)})
    return got, None


class ProgramAdapter(RequestAdapter):
    """Runs vendor code once per request batch with JSON lines on stdin and stdout (module docstring); a kind
    gives the command line (:meth:`command`)."""

    def command(self, request: ScoreRequest) -> list[str]:  # pragma: no cover - interface
        """The argv run per request batch, in the spec's folder."""
        raise NotImplementedError

    def program_name(self) -> str:
        """How messages name what runs."""
        return self.resolved["argv"][0]

    def failure(self, template: str, fields: dict[str, Any]) -> ProgramFailed:
        """The exit-7 error of a broken protocol (a kind may word a failed run its own way)."""
        return ProgramFailed(template.format(**fields))

    progress_label = "program batches"

    def setup(self, request: ScoreRequest) -> None:
        """The request key, the settings (``execution.systems.<id>``: concurrency, timeout_s), the argv."""
        super().setup(request)
        r = self.resolved
        given = request.system_settings.get(self.id) or {}
        self.settings = {**DEFAULT_SETTINGS, **{k: given[k] for k in DEFAULT_SETTINGS if k in given}}
        self.counters = ProcessCounters()
        self.info.update({"kind": self.kind, "version": r["version"], "batch_size": r["batch_size"],
                          "items": int(len(request.resumes)), "settings": self.settings})
        self.info["processes"] = self.counters.__dict__  # live: run.json keeps partial counts when a batch fails
        self.argv = self.command(request)
        #: (attempt, batch position, request batch in the plan batch) -> (plan task, stderr bytes), this process
        self.stderr_parts: dict[tuple[int, int, int], tuple[str, bytes]] = {}

    def score_batch(self, batch) -> pd.DataFrame:
        """Every answer of one plan batch (:data:`runtime.systems.requests.ANSWER_COLUMNS`): its items in the
        key's order, ``batch_size`` per run of the program, at most ``concurrency`` runs at once; the items
        without a valid score sent again (next attempt) up to ``max_invalid_retries`` times.

        Raises
        ------
        ProgramFailed
            A run broke the protocol (exit 7; every answer received before is kept).
        """
        from runtime.systems.answers import score_value

        r, counters = self.resolved, self.counters
        lo, hi = r["score_range"]
        refs = list(batch.plan_tasks)
        log: list[dict[str, Any]] = []
        self._partial = log
        pending = self.items_of(batch)
        for attempt in range(r["max_invalid_retries"] + 1):
            chunks = [(refs, pending[i:i + r["batch_size"]]) for i in range(0, len(pending), r["batch_size"])]
            results = self._run_all(self.argv, chunks, attempt, batch.position)
            again: list[Item] = []
            for (_, chunk), (answers, cached) in zip(chunks, results):  # logged as each request batch ends
                for it in chunk:
                    value, raw = answers[it.rid]
                    p = score_value(value, lo=lo, hi=hi, method=self.kind)
                    log.append({"system": self.id, "job_id": it.job_id, "cv_id": it.cv_id, "variant": it.variant,
                                "resume_id": it.rid, "attempt": attempt, "cached": cached, "valid": p.valid,
                                "score": p.score, "reason": p.reason, "raw_text": raw})
                    if not p.valid:
                        counters.invalid += 1
                        again.append(it)
            pending = sorted(again, key=lambda it: self.order[it.rid])
            if not pending:
                break
        self._partial = []
        return pd.DataFrame(log, columns=list(ANSWER_COLUMNS))

    def _answers(self, frames: list[pd.DataFrame]) -> pd.DataFrame:
        """``answers_<id>.csv`` and ``stderr_<id>.txt`` (each request batch's stderr, numbered per attempt in plan
        order) into the artifacts; the process counters into ``info``."""
        self.info["processes"] = dict(self.counters.__dict__)
        answers = self.answers_frame(self.request, self.log_records(frames))
        parts, number = [], {}
        for a, pos, n in sorted(self.stderr_parts):
            number[a] = number.get(a, 0) + 1
            task, err = self.stderr_parts[(a, pos, n)]
            parts.append(f"# plan task {task}, request batch {number[a]}, attempt {a}\n".encode() + err)
        self.request.artifacts[f"stderr_{self.id}.txt"] = b"".join(parts)
        return answers

    def abort(self, results) -> None:
        """Every answer and every stderr received is kept, also when a later batch fails."""
        self._answers([r.frame for r in results] + [pd.DataFrame(self._partial, columns=list(ANSWER_COLUMNS))])

    def finish(self, results) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Scores ``job_id, cv_id, variant, score, is_true_match`` of every résumé with a valid answer."""
        answers = self._answers([r.frame for r in results])
        return self.scores_of(self.request, answers), self.info

    def _run_all(self, argv: list[str], batches: list[tuple[list[str], list[Item]]], attempt: int,
                 position: int) -> Iterator[tuple[dict[str, Any], bool]]:
        """Each batch's answers in batch order (from the store, else from a run of the program), at most
        ``concurrency`` processes at once; the first failing batch in batch order raises once the running ones
        end (those not started are cancelled)."""
        stop = threading.Event()

        def task(n: int, refs: list[str], chunk: list[Item]) -> tuple[dict[str, Any], bool] | None:
            if stop.is_set():  # another batch failed: start no further process
                return None
            try:
                return self._answer(argv, refs, chunk, attempt, (attempt, position, n))
            except BaseException:
                stop.set()
                raise

        with ThreadPoolExecutor(max_workers=int(self.settings["concurrency"])) as pool:
            futures = [pool.submit(task, n, refs, chunk) for n, (refs, chunk) in enumerate(batches)]
            try:
                for f in futures:
                    result = f.result()
                    if result is None:  # skipped: raise the failure that stopped it
                        for g in futures:
                            if g.exception() is not None:
                                raise g.exception()
                    yield result
            finally:
                stop.set()
                for other in futures:
                    other.cancel()

    def entry_id(self, stdin: bytes, attempt: int) -> tuple[str, dict[str, Any]]:
        """(store id, key) of a batch's answer: ``<kind>-<sha256>`` of the fingerprint, the stdin bytes' sha256 and
        the attempt."""
        from compiler.hashing import digest

        record = {"fingerprint": self.resolved["fingerprint"]["digest"],
                  "stdin_sha256": hashlib.sha256(stdin).hexdigest(), "attempt": attempt}
        return f"{self.kind}-{digest(record)['digest']}", record

    def _answer(self, argv: list[str], refs: list[str], items: list[Item], attempt: int,
                part: tuple[int, int, int]) -> tuple[dict[str, Any], bool]:
        from runtime.testhooks import kill_point

        stdin = stdin_bytes(items, self.request.jobs.get(items[0].job_id) or "")
        eid, record = self.entry_id(stdin, attempt)
        stored = self.request.store.get(eid) if self.request.store is not None else None
        if stored is not None:
            self.counters.from_cache += 1
            self.stderr_parts[part] = (refs[0] if refs else "", stored["stderr"])
            answers, _ = read_stdout(stored["stdout"], items)
            return answers, True
        fields = {"system": self.id, "kind": self.kind, "task": refs[0] if refs else "(none)",
                  "program": self.program_name(), "n": len(items), "rid": items[0].rid}
        self.counters.started += 1
        code, stdout, stderr, timed_out = run_program(argv, stdin, cwd=self.request.spec_folder,
                                                      timeout=float(self.settings["timeout_s"]))
        self.stderr_parts[part] = (fields["task"], stderr)
        fields["last"] = last_line(stderr)
        if timed_out:
            raise self.failure(MSG_TIMEOUT, {**fields, "timeout": float(self.settings["timeout_s"])})
        if code != 0:
            raise self.failure(MSG_EXIT, {**fields, "code": code})
        answers, problem = read_stdout(stdout, items)
        if problem is not None:
            template, more = problem
            raise ProgramFailed(template.format(**{**fields, **more}))
        if self.request.store is not None:
            self.request.store.put(eid, self.kind, {"stdout": stdout, "stderr": stderr},
                                   key={"kind": self.kind, "request": record}, refs=refs)
        kill_point(f"request:{self.id}")
        return answers, False


def run_program(argv: list[str], stdin: bytes, *, cwd: Path, timeout: float) -> tuple[int, bytes, bytes, bool]:
    """Run ``argv`` in ``cwd`` (no shell, its own process group) with ``stdin``; (exit status, stdout, stderr,
    timed out). On timeout the whole process group is killed."""
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as err:  # the program cannot be started: a failed run with the reason as its stderr
        return 127, b"", f"cannot start {argv[0]!r}: {err.strerror or err}".encode(), False
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        return -9, out or b"", err or b"", True


@system("command")
class CommandSystem(ProgramAdapter):
    """Runs the vendor's ``argv`` per request batch (module docstring)."""

    def command(self, request: ScoreRequest) -> list[str]:
        return list(self.resolved["argv"])
