"""The run folder: ``<root>/<audit>/<run id>/`` and its ``run.json`` record.

Every stage writes its artifacts here as soon as it ends, so an error in a later stage (a bad score
CSV, a renderer failure) never loses what was already computed; ``run.json`` is rewritten after every
stage and says ``"status": "failed"`` when the run stopped on an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from compiler.errors import AuditError
from compiler.lock import write_json

MSG_OUT = "cannot create the run folder under {root}: {err}"


class OutputError(AuditError):
    """The output root cannot be written (exit 2)."""


def new_run_dir(root: Path, audit: str, when: str) -> tuple[str, Path]:
    """Create ``root/audit/<UTC stamp>`` (suffix -2, -3... if taken); return (run id, folder).

    Raises
    ------
    OutputError
        When the folder cannot be created (exit 2).
    """
    stamp = when.replace("-", "").replace(":", "")
    base = root / audit
    run_id, n = stamp, 1
    try:
        base.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                (base / run_id).mkdir()
                return run_id, base / run_id
            except FileExistsError:
                n += 1
                run_id = f"{stamp}-{n}"
    except OSError as err:
        raise OutputError(MSG_OUT.format(root=root, err=err)) from None


@dataclass
class RunFolder:
    """The run folder and its ``run.json`` record, rewritten after every stage.

    Attributes
    ----------
    path : pathlib.Path
        The run folder.
    run : dict
        The run record written as ``run.json``; ``run["artifacts"]`` lists the files written.
    keys : runtime.keys.SigningKeys or None
        Signing keys; None for an unsigned run.
    """

    path: Path
    run: dict[str, Any]
    keys: Any = None

    def save(self) -> None:
        """Write ``run.json``."""
        write_json(self.path / "run.json", self.run)

    def write_csv(self, name: str, frame: pd.DataFrame) -> None:
        """Write ``frame`` as ``name`` (no index) and list it once in ``run["artifacts"]``."""
        frame.to_csv(self.path / name, index=False)
        if name not in self.run["artifacts"]:
            self.run["artifacts"].append(name)

    def write_text(self, name: str, text: str) -> None:
        """Write a UTF-8 text file and list it once in ``run["artifacts"]``."""
        (self.path / name).write_text(text, encoding="utf-8")
        if name not in self.run["artifacts"]:
            self.run["artifacts"].append(name)

    def listed(self, name: str) -> None:
        """List a file another writer put into the folder (e.g. the PDF renderer)."""
        if name not in self.run["artifacts"]:
            self.run["artifacts"].append(name)
