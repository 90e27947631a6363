"""The test run's ``--dist loadgroup`` keeps the tests of one ``xdist_group`` on one worker (Makefile's ``make test``).

Several session fixtures (the reduced example's template run, the local LLM server, the Ray head) are built once per
worker and shared by the tests of one group; pytest 9.2 with pytest-xdist 3.8 silently dropped the groups
(pytest-dev/pytest-xdist#1386: the group is carried as a node-id suffix that pytest 9.2 no longer lets a plugin
write), so every worker built them again. pyproject pins ``pytest<9.2``; this test fails if the groups are lost again.
"""

from __future__ import annotations

import os

import pytest


@pytest.mark.xdist_group("loadgroup-guard")
def test_a_grouped_test_carries_its_group_under_loadgroup(request):
    # a worker's ``dist`` option reads "no"; pytest-xdist sets ``loadgroup`` on it (xdist.remote.setup_config)
    if os.environ.get("PYTEST_XDIST_WORKER") is None or not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run by pytest-xdist with --dist loadgroup")
    assert request.node.nodeid.endswith("@loadgroup-guard"), (
        f"--dist loadgroup ignored the xdist_group mark ({request.node.nodeid}): grouped tests may run on several "
        "workers and rebuild their session fixtures (pytest-dev/pytest-xdist#1386)")
