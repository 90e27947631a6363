"""File references of a spec: resolved inside the spec's folder, never outside it (a leaf module).

Every file a spec names (job descriptions, score CSVs, model folders, prompt templates, microdata) is
relative to the spec's folder and may not leave it (DESIGN.md, Spec rules). Checks, resolution and
the designs all resolve references through :func:`resolve_inside`, so the messages are the same
everywhere.
"""

from __future__ import annotations

from pathlib import Path

#: Names of a sentence-transformers model's weights files (any ``*.safetensors`` counts too).
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

MSG_FILE_MISSING = "file {path!r} does not exist (resolved to {resolved})"
MSG_FILE_ESCAPES = "path {path!r} leaves the spec's folder {folder}; file references must stay inside it"
MSG_FILE_ABSOLUTE = "path {path!r} is absolute; file references are relative to the spec's folder"
MSG_NOT_A_FILE = "path {path!r} is a folder; a file is expected here"
MSG_NOT_REGULAR = "path {path!r} is {what}, not a regular file; only a regular file is read (a pipe or a device never is)"
MSG_NOT_A_FOLDER = "path {path!r} is a file; a sentence-transformers model folder is expected here"
MSG_EMPTY = "path is empty; name a file relative to the spec's folder"
MSG_BAD_PATH = "path {path!r} cannot be used: {why}"
MSG_NO_WEIGHTS = "model folder {path!r} holds no weights file (model.safetensors or pytorch_model.bin)"
MSG_NOT_UTF8 = "file {path!r} is not UTF-8 text ({err})"


def weight_files(folder: Path) -> list[Path]:
    """The weights files of a model folder, sorted (empty when there are none).

    Parameters
    ----------
    folder : Path
        A sentence-transformers model folder.

    Returns
    -------
    list of Path
        Files named in :data:`WEIGHT_FILES` or ending in ``.safetensors``, at any depth.
    """
    return sorted(p for p in folder.rglob("*") if p.name in WEIGHT_FILES or p.suffix == ".safetensors")


def resolve_inside(folder: Path, ref: str, *, want: str = "file") -> tuple[Path | None, str | None]:
    """Resolve a reference to a file (``want="file"``) or folder (``"folder"``) inside ``folder``.

    Parameters
    ----------
    folder : Path
        The spec's folder.
    ref : str
        The reference as written in the spec (relative).
    want : {"file", "folder"}
        What the reference must name.

    Returns
    -------
    tuple
        ``(path, None)`` or ``(None, error message)``.
    """
    if not str(ref).strip():
        return None, MSG_EMPTY
    if "\x00" in str(ref):
        return None, MSG_BAD_PATH.format(path=ref, why="it contains a NUL character")
    try:
        if Path(ref).is_absolute():
            return None, MSG_FILE_ABSOLUTE.format(path=ref)
        root = folder.resolve()
        target = (root / ref).resolve()
        if target != root and root not in target.parents:
            return None, MSG_FILE_ESCAPES.format(path=ref, folder=root)
        if not target.exists():
            return None, MSG_FILE_MISSING.format(path=ref, resolved=target)
        if want == "file" and not target.is_file():  # is_file: a regular file (a FIFO or device never is)
            if target.is_dir():
                return None, MSG_NOT_A_FILE.format(path=ref)
            from compiler.files import kind_of

            return None, MSG_NOT_REGULAR.format(path=ref, what=kind_of(target.stat().st_mode))
        if want == "folder" and not target.is_dir():
            return None, MSG_NOT_A_FOLDER.format(path=ref)
    except (OSError, RuntimeError, ValueError) as err:  # too long a name, a symlink loop, ...
        return None, MSG_BAD_PATH.format(path=ref, why=getattr(err, "strerror", None) or str(err))
    return target, None


def reference_problem(folder: Path, ref: str, what: str) -> str | None:
    """What is wrong with one file reference of a spec, or None (the check of every reference at validation).

    Parameters
    ----------
    folder : Path
        The spec's folder.
    ref : str
        The reference as written in the spec (relative).
    what : {"file", "text", "folder"}
        A file; a text read as UTF-8 (a regular file, capped: issue 41); a model folder holding a weights file.

    Returns
    -------
    str or None
        The message (:func:`resolve_inside`'s, or that of the text or the folder).
    """
    path, err = resolve_inside(folder, ref, want="folder" if what == "folder" else "file")
    if err is not None:
        return err
    if what == "folder":
        return None if weight_files(path) else MSG_NO_WEIGHTS.format(path=ref)
    if what == "text":
        from compiler.files import FileProblem, read_regular_text

        try:  # only a regular file, capped (issue 41)
            read_regular_text(path, shown=ref)
        except UnicodeDecodeError as exc:
            return MSG_NOT_UTF8.format(path=ref, err=exc.reason)
        except FileProblem as exc:
            return MSG_BAD_PATH.format(path=ref, why=exc.reason)
    return None


def portable(path: Path, folder: Path) -> str:
    """``path`` as recorded in an artifact: relative to ``folder`` (the spec's folder), POSIX form,
    never absolute, so that no run folder, lock or report carries the machine's directory names
    (issue 14). A path outside the folder is written with ``..`` steps."""
    import os

    return Path(os.path.relpath(Path(path).resolve(), Path(folder).resolve())).as_posix()


def recorded(path: Path, folder: Path, *, outside: str) -> str:
    """``path`` as a signed artifact records a folder the operator may choose (issue 41): relative to
    ``folder`` (the spec's folder, :func:`portable`) when it lies inside it, else the words ``outside``
    (e.g. ``"operator's --out"``), so that no ``..`` steps spell the machine's folders
    (``../../home/<user>/reports``)."""
    try:
        root, target = Path(folder).resolve(), Path(path).resolve()
    except (OSError, RuntimeError, ValueError):
        return outside
    return portable(target, root) if target == root or root in target.parents else outside
