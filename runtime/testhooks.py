"""A test-only hook that kills the process at a named point of a run (the kill tests of issue 11).

``AUDIT_TEST_KILL_AT="<point>[:<n>]"`` sends SIGKILL to this process the n-th time (default 1) the
run reaches ``<point>``. Points: ``generate``, ``score:<system id>``, ``encode:<system id>`` (after a
batch of texts is encoded and stored), ``request:<system id>`` (after
an http system's answer is stored), ``batch:<system id>`` (in a Ray worker, before it scores a batch: the
worker dies, issue 40 B), ``family:<family id>``, ``report``, ``seal``. Unset (always, in
production), :func:`kill_point` does nothing.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

ENV = "AUDIT_TEST_KILL_AT"
_seen: Counter = Counter()


def kill_point(name: str) -> None:
    """SIGKILL this process when ``$AUDIT_TEST_KILL_AT`` names this point and count."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    point, _, count = spec.rpartition(":") if spec.rsplit(":", 1)[-1].isdigit() else (spec, "", "1")
    _seen[name] += 1
    if point == name and _seen[name] == int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)
