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
from runtime.blind import MSG_NO_BLIND, key_id, load_key, new_key

#: Columns of the vendor's file: nothing else leaves the auditor.
VENDOR_COLUMNS = ("resume_id", "job_id", "text")
MSG_DIR_NOT_EMPTY = "{dir}: {name} exists and differs from this export; choose an empty folder"
MSG_DIR_OTHER = ("{dir} holds {files}, which would go to the vendor with the export; choose an empty folder "
                 "outside the spec's folder")
MSG_NOT_DIR = "{dir} is a file, not a folder: --for-vendor names the folder to write the vendor's files into"

VENDOR_README = """\
Résumés to score: {n} résumés for {jobs} job(s), exported on {date}.

Files
- resumes.csv: resume_id, job_id, text. Score every row with your system, as you would a real application
  to the job.
- jobs.csv: job_id, title, description (when the audit has one).

Return a CSV with exactly these columns, one row per resume_id, in any order:

    resume_id,score

Scores on your system's usual scale ({lo:g} to {hi:g}). Do not drop, merge or add rows.
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


def export_for_vendor(spec_path: Path, out: Path, *, quiet: bool = False) -> Export:
    """Generate the locked spec's résumés (from the task store when done before) and write the vendor's
    files into ``out``: ``resumes.csv`` (:data:`VENDOR_COLUMNS`, shuffled, opaque ids), ``jobs.csv`` and
    ``README.txt``. The key goes into the task store (kept; reused by a second export of the same
    résumés, so the files are identical).

    Raises
    ------
    compiler.errors.SpecError, compiler.errors.LockError
        Invalid spec, no lock, or the spec differs from its lock (as ``audit execute``).
    compiler.errors.AuditError
        No system has ``blind: true``, or ``out`` holds other files of these names.
    """
    from compiler import compile_spec
    from compiler.load import display_path
    from compiler.lock import check_lock, read_lock, utc_now
    from runtime.designs import design_for
    from runtime.pipeline.context import RunContext
    from runtime.pipeline.run import _generate, job_texts, store_root
    from runtime.progress import Progress
    from runtime.store import TaskStore, frame_bytes

    compiled = compile_spec(spec_path)
    shown = display_path(spec_path)
    lock = read_lock(spec_path, shown)
    check_lock(lock, compiled.resolved, shown)
    r = compiled.resolved
    blind = [s for s in r["systems"] if s.get("blind")]
    if not blind:
        raise AuditError(MSG_NO_BLIND.format(spec=shown))
    import tempfile

    with Progress(quiet=quiet) as progress, tempfile.TemporaryDirectory() as scratch:
        ctx = RunContext(compiled=compiled, lock=lock, folder=_NoFolder(Path(scratch)), timings={}, progress=progress)
        ctx.store = TaskStore(store_root(compiled))
        ctx.jobs = job_texts(compiled)
        _generate(ctx, design_for(r))
    cands = ctx.candidates
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
    files = {"resumes.csv": vendor.to_csv(index=False).encode("utf-8"),
             "jobs.csv": jobs.to_csv(index=False).encode("utf-8"),
             "README.txt": VENDOR_README.format(n=len(vendor), jobs=len(jobs), date=utc_now()[:10],
                                                lo=lo, hi=hi).encode("utf-8")}
    if out.exists() and not out.is_dir():
        raise AuditError(MSG_NOT_DIR.format(dir=out))
    if out.is_dir():
        other = sorted(p.name for p in out.iterdir() if p.name not in files)
        if other:
            raise AuditError(MSG_DIR_OTHER.format(dir=out, files=", ".join(other[:5]) + (" ..." if len(other) > 5 else "")))
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        p = out / name
        if p.exists() and name != "README.txt" and p.read_bytes() != data:
            raise AuditError(MSG_DIR_NOT_EMPTY.format(dir=out, name=name))
    for name, data in files.items():
        (out / name).write_bytes(data)
    return Export(folder=out, n=len(vendor), jobs=len(jobs), key_id=kid, reused=reused)

