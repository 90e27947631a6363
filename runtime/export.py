"""Blind scoring by a vendor (issue 15): ``audit export SPEC --for-vendor DIR``.

When the tool writes the résumés and the vendor scores them with its own system, the vendor must
not learn which résumé is which variant. The export writes the résumés of the locked spec

- under **opaque ids** (``R`` + 10 random hex digits from the operating system's generator, so that
  nobody who holds the spec and its seed can rebuild them),
- in a **shuffled order** across jobs, base candidates and variants (the same generator),
- with only ``resume_id, job_id, text``: no variant, no axis level, no cv_id, no pair id.

The **key** (``resume_id -> job_id, cv_id, variant``, with each text's sha256) never leaves the
auditor: it is kept in the task store under an id derived from the generated résumés themselves
(:func:`runtime.blind.key_id`), so a second export of the same résumés writes the same file, and ``audit
execute`` finds the key for the résumés it generates again. The ``precomputed`` system with
``blind: true`` reads the vendor's ``resume_id, score`` file through it (:func:`runtime.blind.load_key`,
:func:`compiler.score_file.read_blind_scores`), and the run seals the key as ``blind_key.csv``.

The résumé texts still carry the manipulated cue (that is the experiment) and near-identical
texts of one base candidate remain near-identical; what the export removes is every label, id and
order that says which résumés belong together or which variant each one is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from compiler.errors import AuditError
from runtime.blind import MSG_NO_BLIND, blind_candidates, key_id, load_key, new_key
from runtime.csvsafe import csv_bytes

#: Columns of the vendor's file: nothing else leaves the auditor.
VENDOR_COLUMNS = ("resume_id", "job_id", "text")
MSG_DIR_NOT_EMPTY = "{dir}: {name} exists and differs from this export; choose an empty folder"
MSG_DIR_OTHER = ("{dir} holds {files}, which would go to the vendor with the export; choose an empty folder "
                 "outside the spec's folder")
MSG_NOT_DIR = "{dir} is a file, not a folder: --for-vendor names the folder to write the vendor's files into"
MSG_WRITE = ("cannot write the vendor's files into {dir}: {why} ({path}); nothing was written there: free space on "
             "that disk (or make it writable), or choose another --for-vendor folder")

VENDOR_README = """\
Résumés to score: {n} résumés for {jobs} job(s), exported on {date}.

Files
- resumes.csv: resume_id, job_id, text. Score every row with your system, as you would a real application
  to the job.
- jobs.csv: job_id, title, description (when the audit has one).

Return a CSV with exactly these columns, one row per resume_id, in any order:

    resume_id,score

Scores on your system's usual scale ({lo:g} to {hi:g}), written with ASCII digits (e.g. 72 or 0.85). Do not
drop, merge or add rows.

A cell that begins with ' followed by =, +, -, @ or ' had that ' added so that a spreadsheet shows it as text
instead of running it as a formula; the text to score is the cell without that first '.
"""


@dataclass
class Export:
    """What :func:`export_for_vendor` wrote."""

    folder: Path
    n: int
    jobs: int
    key_id: str
    reused: bool


class _NoFolder:
    """Stands in for the run folder while only generating: an export keeps no run artifacts (a
    generator's trail goes to a scratch folder that is removed afterwards)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.run: dict[str, Any] = {"reused_tasks": [], "computed_tasks": [], "systems_info": {}, "artifacts": []}

    def write_csv(self, name: str, frame: pd.DataFrame) -> None:
        pass

    def save(self) -> None:
        pass


def export_for_vendor(spec_path: Path, out: Path, *, store: Path | None = None, quiet: bool = False) -> Export:
    """Generate the locked spec's résumés (from the task store when done before) and write the vendor's
    files into ``out``: ``resumes.csv`` (:data:`VENDOR_COLUMNS`, shuffled, opaque ids), ``jobs.csv`` and
    ``README.txt``. The key goes into the task store (``store``, the operator's ``--store``, else the
    spec's; kept, and reused by a second export of the same résumés, so the files are identical).
    Text cells are made safe for spreadsheets (:mod:`runtime.csvsafe`). The files are written into a
    temporary folder beside ``out`` and moved into place at the end (issue 41), so a full disk leaves
    no partial file where the vendor looks.

    Raises
    ------
    compiler.errors.SpecError, compiler.errors.LockError
        Invalid spec, no lock, or the spec differs from its lock (as ``audit execute``).
    compiler.errors.AuditError
        No system has ``blind: true``, or ``out`` holds other files of these names, or the files cannot
        be written (disk full, read-only, permission: exit 2, nothing left in ``out``).
    """
    from compiler.designs.matrix import all_controls
    from compiler.lock import utc_now
    from runtime.designs import design_for
    from runtime.pipeline.generate import generate, job_texts
    from runtime.pipeline.start import open_run
    from runtime.progress import Progress
    from runtime.run.context import RunContext
    from runtime.store import TaskStore, frame_bytes

    locked = open_run(spec_path, store=store, folder=False, stage="resolve")
    compiled, lock, shown = locked.compiled, locked.lock, locked.shown
    r = compiled.resolved
    blind = [s for s in r["systems"] if s.get("blind")]
    if not blind:
        raise AuditError(MSG_NO_BLIND.format(spec=shown))
    import tempfile

    with Progress(quiet=quiet) as progress, tempfile.TemporaryDirectory() as scratch:
        ctx = RunContext(compiled=compiled, lock=lock, folder=_NoFolder(Path(scratch)), timings={}, progress=progress)
        ctx.store = TaskStore(locked.store_dir)
        ctx.jobs = job_texts(compiled)
        generate(ctx, design_for(r))
        if all_controls(r):  # issues 38, 39 §6: control résumés mixed in under opaque ids
            design_for(r).generate_controls(ctx)
    cands = blind_candidates(ctx.candidates, ctx.control_candidates)
    found = load_key(ctx.store, cands)
    reused = found is not None
    if found is None:
        key = new_key(cands)
        kid = key_id(cands)
        ctx.store.put(kid, "blind_key", {"key": frame_bytes(key)},
                      key={"audit": r["audit"], "exported_at": utc_now(), "resumes": len(key)})
    else:
        kid, key = found
    text = dict(zip(zip(cands["job_id"], cands["cv_id"], cands["variant"]), cands["text"]))
    vendor = pd.DataFrame({"resume_id": key["resume_id"], "job_id": key["job_id"],
                           "text": [text[c] for c in zip(key["job_id"], key["cv_id"], key["variant"])]})
    jobs = pd.DataFrame([{"job_id": j["id"], "title": j["title"], "description": ctx.jobs.get(j["id"]) or ""}
                         for j in r["jobs"]])
    lo, hi = blind[0]["score_range"]
    files = {"resumes.csv": csv_bytes(vendor), "jobs.csv": csv_bytes(jobs),
             "README.txt": VENDOR_README.format(n=len(vendor), jobs=len(jobs), date=utc_now()[:10],
                                                lo=lo, hi=hi).encode("utf-8")}
    if out.exists() and not out.is_dir():
        raise AuditError(MSG_NOT_DIR.format(dir=out))
    if out.is_dir():
        other = sorted(p.name for p in out.iterdir() if p.name not in files)
        if other:
            raise AuditError(MSG_DIR_OTHER.format(dir=out, files=", ".join(other[:5]) + (" ..." if len(other) > 5 else "")))
    for name, data in files.items():
        p = out / name
        if p.exists() and name != "README.txt" and p.read_bytes() != data:
            raise AuditError(MSG_DIR_NOT_EMPTY.format(dir=out, name=name))
    _write_folder(out, files)
    return Export(folder=out, n=len(vendor), jobs=len(jobs), key_id=kid, reused=reused)


def _write_folder(out: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (name -> bytes) into the folder ``out``: into a temporary folder beside it first
    (each file fsynced), then renamed into place, the whole folder when ``out`` is absent or empty,
    else file by file (each ``os.replace`` is atomic). A failure leaves ``out`` as it was and removes
    the temporary folder.

    Raises
    ------
    compiler.errors.AuditError
        :data:`MSG_WRITE` (exit 2) on an ``OSError`` (disk full, read-only file system, permission).
    """
    import os
    import secrets
    import shutil

    tmp: Path | None = None
    current = out
    try:
        full = Path(os.path.abspath(out))  # `--for-vendor .` has a name too
        full.parent.mkdir(parents=True, exist_ok=True)
        current = full.parent / f".{full.name}.{secrets.token_hex(4)}.tmp"
        current.mkdir()  # the umask's mode, as the folder it becomes
        tmp = current
        for name, data in files.items():
            current = tmp / name
            with open(current, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        current = out
        if not out.exists() or not any(out.iterdir()):
            os.replace(tmp, out)  # an absent or empty folder is replaced whole (POSIX rename)
            tmp = None
        else:  # the same export again: only these files are there (checked by the caller)
            for name in files:
                os.replace(tmp / name, out / name)
    except OSError as err:
        path = os.fsdecode(err.filename) if err.filename is not None else str(current)
        raise AuditError(MSG_WRITE.format(dir=out, why=err.strerror or err, path=path)) from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
