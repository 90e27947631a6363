"""User-facing errors of the compiler: one clear line per problem, ``file:line:col: key.path: message``.

The CLI prints :class:`SpecError` without a traceback and exits 2; :class:`LockMismatch` exits 3.
Any other exception is an internal error and keeps its traceback (DVC ``strictyaml`` style).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Issue:
    """One problem in a spec, located in the YAML file (1-based line and column)."""

    file: str
    line: int | None
    col: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}:{self.col or 1}"
        key = f" {self.path}:" if self.path else ""
        return f"{where}:{key} {elide(self.message)}"


@dataclass(frozen=True)
class Finding:
    """One problem a check found, not yet located: the key path it concerns and the message.

    A check returns findings; :meth:`compiler.load.LoadedSpec.locate` turns all of them into
    :class:`Issue` objects at once (``key=True``: at the mapping key itself, as for an unknown key)."""

    loc: tuple
    message: str
    key: bool = False


#: The most characters of one message printed; a longer one (it quotes a long value of the spec) keeps its
#: start and its end, which says what is allowed (issue 41: a 200 KB value used by 45 aliases printed 9 MB).
MAX_MESSAGE_CHARS = 1000


def elide(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``message`` with its middle replaced by ``… [N characters omitted] …`` when longer than ``limit``."""
    if len(message) <= limit:
        return message
    head, tail = message[: limit * 7 // 10], message[-(limit * 2 // 10):]
    return f"{head} … [{len(message) - len(head) - len(tail):,} characters omitted] … {tail}"


#: Most issues of one kind printed (issue 37 §2); the rest are counted in one line, "and N more like it" (a
#: 256 KB spec holding a 99,000-item list printed 34 MB of errors).
MAX_PER_KIND = 20


def issue_kind(issue: Issue) -> tuple[str, str]:
    """What makes issues "alike": the key path with its list indices dropped (``jobs[]``) and the message
    with its quoted values and numbers dropped."""
    path = re.sub(r"\[\d+\]", "[]", issue.path)
    message = re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\d+(?:\.\d+)?", "#", issue.message)
    return path, message


def bounded(issues: list[Issue], limit: int = MAX_PER_KIND) -> list[str]:
    """The printed lines of ``issues``: at most ``limit`` of each kind (:func:`issue_kind`), then one line
    located at the first left out, ``and N more like it``."""
    counts = Counter(issue_kind(i) for i in issues)
    seen: Counter = Counter()
    out = []
    for issue in issues:
        kind = issue_kind(issue)
        seen[kind] += 1
        if seen[kind] <= limit:
            out.append(str(issue))
        elif seen[kind] == limit + 1:
            out.append(str(Issue(issue.file, issue.line, issue.col, kind[0],
                                 f"and {counts[kind] - limit:,} more like it")))
    return out


class AuditError(Exception):
    """Base of every error caused by the user's input (never by a bug)."""

    exit_code = 2


class SpecError(AuditError):
    """The spec is invalid; carries one :class:`Issue` per problem, in file order."""

    exit_code = 2

    def __init__(self, issues: list[Issue]):
        self.issues = sorted(issues, key=lambda i: (i.line or 0, i.col or 0, i.path))
        super().__init__("\n".join(bounded(self.issues)))


class LockError(AuditError):
    """The lock is missing or no longer matches the spec (exit 3)."""

    exit_code = 3


class InputDataError(AuditError):
    """A data file the spec names (e.g. a precomputed score CSV) is wrong; names the rows (exit 2)."""

    exit_code = 2
