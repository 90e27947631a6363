"""The one YAML loader: keeps line marks, rejects duplicate keys, turns every error into an Issue.

Errors read ``file:line:col: key.path: message`` and say what is allowed (after DVC
``dvc/utils/strictyaml.py``). Positions are 1-based.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from compiler.errors import Issue, SpecError
from compiler.spec import GENERATORS, SYSTEM_KINDS, AuditSpec

MSG_NOT_MAPPING = "the spec must be a YAML mapping at the top level"
MSG_DUPLICATE_KEY = "duplicate key {key!r}; a key may appear only once in a mapping"
MSG_UNKNOWN_KEY = "unknown key {key!r}; allowed: {allowed}"
MSG_MISSING_KEY = "required key {key!r} is missing"
MSG_READ = "cannot read the spec: {err}"


@dataclass
class LoadedSpec:
    """A parsed and structurally valid spec, with the YAML tree kept for error positions."""

    path: Path
    spec: AuditSpec
    raw: dict
    doc: Any  # ruamel CommentedMap, used by :func:`locate`

    @property
    def folder(self) -> Path:
        return self.path.parent

    def issue(self, loc: tuple, message: str, *, key: bool = False) -> Issue:
        """Build an :class:`Issue` located at ``loc`` (a key path) in this spec's YAML."""
        line, col = locate(self.doc, loc, key=key)
        return Issue(display_path(self.path), line, col, dotted(loc), message)


def display_path(path: Path) -> str:
    """The path as the user should read it: relative to the working directory when possible."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def dotted(loc: tuple) -> str:
    """``("systems", 0, "path")`` -> ``systems[0].path``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _yaml():
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.allow_duplicate_keys = False
    return y


def locate(doc: Any, loc: tuple, *, key: bool = False) -> tuple[int | None, int | None]:
    """Return the 1-based (line, col) of the node at ``loc``; the deepest known ancestor if absent.

    With ``key=True`` the position of the mapping key itself is returned (for unknown keys).
    """
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    node = doc
    pos = (1, 1)
    if hasattr(doc, "lc"):
        pos = (doc.lc.line + 1, doc.lc.col + 1)
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, CommentedMap):
            if part not in node:
                continue  # e.g. a pydantic union tag such as "embedding"
            if last and key:
                ln, cl = node.lc.key(part)
            else:
                ln, cl = node.lc.value(part) if node[part] is not None else node.lc.key(part)
            pos = (ln + 1, cl + 1)
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int):
            if part >= len(node):
                break
            ln, cl = node.lc.item(part)
            pos = (ln + 1, cl + 1)
            node = node[part]
        else:
            break
    return pos


def _plain(node: Any) -> Any:
    """Convert ruamel's commented containers into plain dicts/lists/scalars."""
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return node


def read_yaml(path: Path) -> tuple[Any, Any]:
    """Parse ``path``; return (plain data, ruamel document). Raises :class:`SpecError`."""
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import MarkedYAMLError

    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError([Issue(shown, None, None, "", MSG_READ.format(err=err))]) from None
    try:
        doc = _yaml().load(text)
    except DuplicateKeyError as err:
        mark = err.problem_mark
        key = str(err.problem).split('"')[1] if '"' in str(err.problem) else "?"
        path = _duplicate_key_path(text, key, mark.line, mark.column) or key
        raise SpecError(
            [Issue(shown, mark.line + 1, mark.column + 1, path, MSG_DUPLICATE_KEY.format(key=key))]
        ) from None
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        msg = " ".join(x for x in (err.context, err.problem) if x)
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise SpecError([Issue(shown, line, col, "", f"YAML syntax error: {msg}")]) from None
    if not isinstance(doc, dict):
        raise SpecError([Issue(shown, 1, 1, "", MSG_NOT_MAPPING)])
    return _plain(doc), doc


def _duplicate_key_path(text: str, key: str, line: int, col: int) -> str | None:
    """Dotted path of a duplicated key: the mapping holding ``key`` at the same column, above ``line``."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    y = _yaml()
    y.allow_duplicate_keys = True
    try:
        doc = y.load(text)
    except Exception:  # noqa: BLE001 - best effort; the plain key is still reported
        return None
    best: tuple[int, tuple] | None = None

    def walk(node: Any, loc: tuple) -> None:
        nonlocal best
        if isinstance(node, CommentedMap):
            if key in node:
                kl, kc = node.lc.key(key)
                if kc == col and kl < line and (best is None or kl > best[0]):
                    best = (kl, loc + (key,))
            for k, v in node.items():
                walk(v, loc + (k,))
        elif isinstance(node, CommentedSeq):
            for i, v in enumerate(node):
                walk(v, loc + (i,))

    walk(doc, ())
    return dotted(best[1]) if best else None


def _unwrap(tp: Any) -> list[Any]:
    """Flatten Optional/Union/Annotated into the list of candidate types."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        out = []
        for arg in typing.get_args(tp):
            out.extend(_unwrap(arg))
        return out
    return [tp]


def allowed_keys(model: type[BaseModel], loc: tuple) -> list[str] | None:
    """Keys allowed at ``loc`` (the parent of an unknown key), following the model's annotations."""
    candidates: list[Any] = [model]
    for part in loc:
        nxt: list[Any] = []
        for tp in candidates:
            for t in _unwrap(tp):
                if isinstance(t, type) and issubclass(t, BaseModel):
                    for name, field in t.model_fields.items():
                        if part in (name, field.alias):
                            nxt.append(field.annotation)
                    if isinstance(part, str) and part == getattr(
                        t.model_fields.get("kind"), "default", object()
                    ):
                        nxt.append(t)
                    for tag_field in ("kind", "generator"):  # a discriminated union's tag in the loc
                        tag = t.model_fields.get(tag_field)
                        if tag is not None and part in typing.get_args(tag.annotation):
                            nxt.append(t)
                elif typing.get_origin(t) in (list, tuple) and isinstance(part, int):
                    nxt.extend(typing.get_args(t)[:1])
                elif typing.get_origin(t) is dict:
                    nxt.append(typing.get_args(t)[1])
        candidates = nxt
    keys: list[str] = []
    for tp in candidates:
        for t in _unwrap(tp):
            if isinstance(t, type) and issubclass(t, BaseModel):
                keys += [f.alias or n for n, f in t.model_fields.items()]
    return sorted(dict.fromkeys(keys)) or None


def _strip_tags(loc: tuple) -> tuple:
    """Drop pydantic's union tags from an error location (``systems.0.llm_score.model`` ->
    ``systems.0.model``, ``candidates.llm.model`` -> ``candidates.model``) and ``[key]``."""
    out: list = []
    for i, p in enumerate(loc):
        if p == "[key]":
            continue
        prev = loc[i - 1] if i else None
        if (p in SYSTEM_KINDS and isinstance(prev, int) and i > 1 and loc[i - 2] == "systems") or \
                (p in GENERATORS and prev == "candidates"):
            continue
        out.append(p)
    return tuple(out)


def _pydantic_issues(path: Path, doc: Any, err: ValidationError) -> list[Issue]:
    shown = display_path(path)
    issues = []
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        if e["type"] == "extra_forbidden":
            allowed = allowed_keys(AuditSpec, loc[:-1])
            line, col = locate(doc, loc, key=True)
            msg = MSG_UNKNOWN_KEY.format(key=loc[-1], allowed=", ".join(allowed or []))
        elif e["type"] == "union_tag_not_found":
            line, col = locate(doc, loc)
            msg = MSG_MISSING_KEY.format(key="kind") + f"; allowed: {', '.join(SYSTEM_KINDS)}"
            loc = loc + ("kind",)
        elif e["type"] == "invalid_generator":
            loc = loc + ("generator",)
            line, col = locate(doc, loc)
            got = e["input"].get("generator") if isinstance(e["input"], dict) else None
            msg = e["msg"] + (f" (got {got!r})" if got is not None else "")
        elif e["type"] == "missing":
            line, col = locate(doc, loc[:-1])
            msg = MSG_MISSING_KEY.format(key=loc[-1])
        else:
            clean = tuple(p for p in loc if p != "[key]")
            line, col = locate(doc, clean, key="[key]" in loc)
            msg = e["msg"]
            if "input" in e and not isinstance(e["input"], (dict, list)):
                msg += f" (got {e['input']!r})"
        loc = _strip_tags(loc)
        issues.append(Issue(shown, line, col, dotted(loc), msg))
    return issues


def load_spec(path: str | Path) -> LoadedSpec:
    """Read and structurally validate a spec file.

    Raises
    ------
    SpecError
        Syntax errors, duplicate keys, unknown keys, wrong types, missing keys; every issue is
        located as ``file:line:col``.
    """
    path = Path(path)
    raw, doc = read_yaml(path)
    try:
        spec = AuditSpec.model_validate(raw)
    except ValidationError as err:
        raise SpecError(_pydantic_issues(path, doc, err)) from None
    return LoadedSpec(path=path, spec=spec, raw=raw, doc=doc)
