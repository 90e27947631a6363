"""``audit init``: write a commented starter audit into a folder.

One starter per design of :data:`compiler.designs.DESIGNS`, shipped as package data in
``runtime/init/<design>/``: its ``audit.yaml`` (first line
``# yaml-language-server: $schema=audit.schema.json``; every block says what it means and what is
allowed) and the files the spec names (a score file, job postings). :func:`init_audit` copies them
into the folder and writes ``audit.schema.json`` beside them, generated from the spec models
(:func:`compiler.schema.spec_schema`), so an editor completes and checks the keys.

It never replaces a file: every file it would write is checked first, and on any refusal nothing is
written (exit 2).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

#: The spec a starter writes, and the schema written beside it.
SPEC_FILE = "audit.yaml"
SCHEMA_FILE = "audit.schema.json"
#: First line of every starter's ``audit.yaml``: the YAML language server reads the schema from it.
SCHEMA_LINE = f"# yaml-language-server: $schema={SCHEMA_FILE}"
#: The design ``audit init`` writes when none is named.
DEFAULT_DESIGN = "score_file"
#: What each design's starter audits, for ``audit init --help``; one entry per design of
#: :data:`compiler.designs.DESIGNS`, in its order (a test keeps them equal). Kept here, not read
#: from ``DESIGNS``, so that ``audit --help`` imports no compiler module.
DESIGN_WORDS: dict[str, str] = {
    "template": "résumés written by the tool, scored by the packaged embedding matcher",
    "llm": "résumés written by LLM agents, scored by an LLM, both on the local demo server",
    "population": "population profiles and path-specific effects (seed 001), the packaged embedding matcher",
    "score_file": "a vendor's score export (scores.csv); nothing generated or scored",
    "applicants": "historical applicants (applicants.csv) for NYC Local Law 144; no row kept",
}

MSG_SYSTEM_KIND = "--design {name}: a system kind, not a design; did you mean {design}? The designs are: {designs}"
MSG_UNKNOWN_DESIGN = "--design {name}: unknown design; the designs are: {designs}"
MSG_NO_STARTER = "design {name!r} has no starter in runtime/init/{name}/ (a packaging error)"
MSG_EXISTS = ("{dir}: {files} already {verb}; audit init replaces no file and wrote nothing: "
              "init into another folder, or move {them} away")
MSG_NOT_A_FOLDER = "{dir}: not a folder; audit init wrote nothing"
MSG_UNWRITABLE = "{dir}: cannot write into this folder ({reason}); audit init wrote nothing"


@dataclass(frozen=True)
class Written:
    """What :func:`init_audit` wrote: the folder and the files, relative to it, in writing order."""

    folder: Path
    files: tuple[str, ...]
    design: str


def designs() -> tuple[str, ...]:
    """The designs ``audit init`` offers: the ids of :data:`compiler.designs.DESIGNS`."""
    from compiler.designs import DESIGNS

    return tuple(DESIGNS)


def starter_dir(design: str) -> Traversable:
    """The package-data folder of a design's starter (``runtime/init/<design>/``)."""
    return files(__name__).joinpath(design)


def _suggested_design(kind: str) -> str:
    """The design that audits a system of this kind: score_file for a kind that reads scores from a
    file, llm for an LLM kind, else template (the tool writes the résumés it scores)."""
    from compiler.designs import DEFAULT_GENERATOR, SCORE_FILE
    from compiler.spec import LLM_SYSTEM_KINDS
    from compiler.systems import SYSTEMS

    hook = SYSTEMS.get(kind)
    if kind == "applicant_file":
        return "applicants"
    if hook is not None and not hook.needs_text:
        return SCORE_FILE
    return "llm" if kind in LLM_SYSTEM_KINDS else DEFAULT_GENERATOR


def check_design(name: str) -> str:
    """``name`` when it is a design; else an :class:`AuditError` naming the designs (and, for a
    system kind such as ``precomputed``, the design that audits it)."""
    from compiler.errors import AuditError
    from compiler.spec import SYSTEM_KINDS
    from compiler.systems import SYSTEMS

    known = designs()
    if name in known:
        return name
    listed = ", ".join(known)
    if name in SYSTEM_KINDS or name in SYSTEMS:
        raise AuditError(MSG_SYSTEM_KIND.format(name=name, design=_suggested_design(name), designs=listed))
    raise AuditError(MSG_UNKNOWN_DESIGN.format(name=name, designs=listed))


def starter_files(design: str) -> dict[str, bytes]:
    """The starter's files of a design, path relative to the starter (``/``-separated) -> bytes,
    ``audit.yaml`` first; :data:`SCHEMA_FILE` is not among them (:func:`init_audit` generates it)."""
    from compiler.errors import AuditError

    root = starter_dir(check_design(design))
    if not root.is_dir() or not root.joinpath(SPEC_FILE).is_file():
        raise AuditError(MSG_NO_STARTER.format(name=design))
    out: dict[str, bytes] = {SPEC_FILE: root.joinpath(SPEC_FILE).read_bytes()}

    def walk(folder: Traversable, prefix: str) -> None:
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name.startswith((".", "__")) or entry.name.endswith((".pyc", ".py")):
                continue  # __init__.py, __pycache__, editor files
            rel = f"{prefix}{entry.name}"
            if entry.is_dir():
                walk(entry, rel + "/")
            elif rel != SPEC_FILE:
                out[rel] = entry.read_bytes()

    walk(root, "")
    return out


def _probe(folder: Path) -> None:
    """Raise :class:`OSError` when no file can be created in ``folder``."""
    with tempfile.TemporaryFile(dir=folder, prefix=".audit-init-"):
        pass


def init_audit(folder: Path, design: str = DEFAULT_DESIGN) -> Written:
    """Write the starter of ``design`` into ``folder`` (created when missing).

    Parameters
    ----------
    folder : Path
        Where to write ``audit.yaml``, ``audit.schema.json`` and the files the spec names.
    design : str
        One of :func:`designs`; default ``score_file``.

    Returns
    -------
    Written
        The folder and the files written.

    Raises
    ------
    AuditError
        Unknown design or a system kind (``MSG_UNKNOWN_DESIGN``, ``MSG_SYSTEM_KIND``); a file it would
        write exists (``MSG_EXISTS``, naming it); ``folder`` is a file, or cannot be created or written
        (``MSG_NOT_A_FOLDER``, ``MSG_UNWRITABLE``). Nothing is written then.
    """
    from compiler.errors import AuditError
    from compiler.schema import render, spec_schema

    contents = starter_files(design)
    contents[SCHEMA_FILE] = render(spec_schema()).encode("utf-8")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise AuditError(MSG_NOT_A_FOLDER.format(dir=folder))
    subfolders = {str(Path(rel).parent) for rel in contents if "/" in rel}  # e.g. jobs: must not be a file
    clash = [rel for rel in contents if os.path.lexists(folder / rel)]
    clash += sorted(sub for sub in subfolders if os.path.lexists(folder / sub) and not (folder / sub).is_dir())
    if clash:
        names = ", ".join(str(folder / rel) for rel in clash)
        raise AuditError(MSG_EXISTS.format(dir=folder, files=names, verb="exists" if len(clash) == 1 else "exist",
                                           them="it" if len(clash) == 1 else "them"))
    created: list[Path] = []  # folders made here, removed again when the folder is not writable
    try:
        missing = [p for p in (folder, *folder.parents) if not p.exists()]
        for p in reversed(missing):
            p.mkdir()
            created.append(p)
        _probe(folder)
    except OSError as err:
        for p in reversed(created):
            p.rmdir()
        raise AuditError(MSG_UNWRITABLE.format(dir=folder, reason=err.strerror or type(err).__name__)) from None
    written: list[str] = []
    for rel, data in contents.items():
        target = folder / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as fh:  # never over a file (one made since the check included)
                fh.write(data)
        except OSError as err:
            raise AuditError(MSG_UNWRITABLE.format(dir=folder, reason=f"{target}: {err.strerror or err}")) from None
        written.append(rel)
    return Written(folder=folder, files=tuple(written), design=design)
