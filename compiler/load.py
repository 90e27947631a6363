"""The one YAML loader: keeps line marks, rejects duplicate keys, turns every error into an Issue.

Errors read ``file:line:col: key.path: message`` and say what is allowed (after DVC
``dvc/utils/strictyaml.py``). Positions are 1-based.
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ValidationError

from compiler.errors import Finding, Issue, SpecError
from compiler.files import FileProblem, read_regular
from compiler.spec import GENERATORS, SYSTEM_KINDS, AuditSpec
from compiler.text import describe, first_forbidden, terminal_safe

MSG_NOT_MAPPING = "the spec must be a YAML mapping at the top level"
MSG_DUPLICATE_KEY = "duplicate key {key!r}; a key may appear only once in a mapping"
MSG_UNKNOWN_KEY = "unknown key {key!r}; allowed: {allowed}"
MSG_MISSING_KEY = "required key {key!r} is missing"
MSG_READ = "cannot read the spec: {err}"
MSG_TOO_LARGE = "the spec is {size:,} bytes; a spec may be at most {cap:,} bytes (move long texts into files it names)"
MSG_NOT_UTF8 = "the spec is not UTF-8 text: byte 0x{byte:02x} cannot be decoded; save the file as UTF-8"
MSG_CONTROL = ("character U+{code:04X} is not allowed in a spec (control characters, Unicode non-characters and "
               "bidirectional overrides); only tab, line feed and carriage return are")
MSG_SCALAR_CONTROL = ("the value holds character {code} (after YAML escapes such as \\e or \\x85 are decoded), "
                      "which is not allowed in a spec (control characters, Unicode non-characters and bidirectional "
                      "overrides); only tab, line feed and carriage return are")
MSG_BYTES = ("the values expand to more than {limit:,} bytes; a spec may hold at most {limit:,} bytes of text after "
             "aliases are expanded (an alias of a long text counts each time it is used; name a file instead)")
MSG_YAML_VERSION = ("%YAML {version} is not supported; a spec is YAML 1.2 (write %YAML 1.2 or %YAML 1.1, or no "
                    "directive)")
MSG_DEPTH = "nesting deeper than {limit} levels; a spec is at most {limit} levels deep"
MSG_EXPANSION = ("the aliases expand to more than {limit:,} nodes; a spec may hold at most {limit:,} "
                 "(an alias repeated inside aliases grows exponentially)")
MSG_TAG = "YAML tag {tag!r} is not allowed; only the standard !!str, !!int, !!float, !!bool and !!null tags are"
MSG_TAG_VALUE = "{value!r} is not a valid {tag}"
MSG_KEY_BREAK = ("a key may not contain a line break, a control character or a bidirectional override "
                 "(got {key})")
MSG_BAD_DATE = "{value!r} is not a valid date or time ({err})"
MSG_KEY_NOT_SCALAR = "a key must be a plain value (a name), not a list or a mapping"
MSG_BIG_INT = "integer {value} is out of range; integers in a spec must lie within ±2^53"
#: Largest spec file read (bytes): a spec is a short configuration; long texts belong in files it names.
MAX_BYTES = 256 * 1024
#: Deepest nesting of mappings and sequences.
MAX_DEPTH = 64
#: Most YAML nodes after expanding aliases (an alias bomb of 1 KB expands to billions).
MAX_NODES = 100_000
#: Most bytes (UTF-8) of scalar text after expanding aliases (issue 41): a 108 KB spec of aliases of one
#: long string stays under :data:`MAX_NODES` yet expands to gigabytes in the plan. 10 MB is forty times
#: :data:`MAX_BYTES`, far above any spec written by hand (long texts belong in files the spec names).
MAX_SCALAR_BYTES = 10 * 1024 * 1024
#: The ``%YAML`` directive versions accepted (ruamel.yaml reads 1.1 and 1.2 and asserts on other minors).
YAML_VERSIONS = ("1.1", "1.2")
#: Largest integer magnitude (integers travel through JSON and float64 hashes: 2^53 is exact in both).
MAX_INT = 2 ** 53
_STD = "tag:yaml.org,2002:"
#: Tags a node may carry: the standard scalars, the containers, the merge key; timestamps are
#: resolved implicitly from plain scalars such as 2026-12-01.
ALLOWED_TAGS = {_STD + t for t in ("str", "int", "float", "bool", "null", "map", "seq", "merge", "timestamp")}


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

    @property
    def shown(self) -> str:
        """The spec's path as messages name it (:func:`display_path`)."""
        return display_path(self.path)

    def issue(self, loc: tuple, message: str, *, key: bool = False) -> Issue:
        """Build an :class:`Issue` located at ``loc`` (a key path) in this spec's YAML."""
        line, col = locate(self.doc, loc, key=key)
        return Issue(self.shown, line, col, dotted(loc), message)

    def locate(self, found: Iterable[Issue | Finding]) -> list[Issue]:
        """Every finding of a check located in this spec's YAML, in order (an :class:`Issue`, which a
        plug-in's check located itself, is kept as it is)."""
        return [f if isinstance(f, Issue) else self.issue(f.loc, f.message, key=f.key) for f in found]


def display_path(path: Path) -> str:
    """The path as the user should read it: relative to the working directory when possible."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):  # outside the working directory; a symlink loop (3.11: RuntimeError)
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
            if part not in node:  # a key YAML read as a number or a boolean: pydantic names it as text
                part = next((k for k in node if str(k) == str(part)), part)
            if part not in node:
                continue  # e.g. a pydantic union tag such as "embedding"
            owner = _key_owner(node, part)  # a merged key (<<: *anchor) is located where it is written
            where = _key_position(owner, part, key=last and key)
            if where is not None:
                pos = (where[0] + 1, where[1] + 1)
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


def _lc_keys(node: Any) -> dict:
    """The keys ruamel recorded positions for in ``node`` (none for a mapping that holds only a merge key,
    whose ``lc.data`` is None)."""
    return getattr(getattr(node, "lc", None), "data", None) or {}


def _key_owner(node: Any, part: Any) -> Any:
    """The mapping in which ``part`` is written: ``node`` itself, or (for a key that comes from a YAML
    merge key ``<<: *anchor`` or ``<<: [*a, *b]``) the merged mapping that holds it, searched in merge
    order and through merges of merges, at any depth (issue 37 §2)."""
    if part in _lc_keys(node):
        return node
    for source in getattr(node, "merge", None) or ():
        source = source[1] if isinstance(source, tuple) else source  # (position, mapping) in older ruamel
        if isinstance(source, dict) and part in source:
            return _key_owner(source, part)
    return node


def _key_position(owner: Any, part: Any, *, key: bool) -> tuple[int, int] | None:
    """0-based (line, col) of ``part``'s key (``key``) or of its value (a null value: its key) in
    ``owner``; None when ruamel recorded none."""
    data = _lc_keys(owner)
    if part not in data:
        return None
    if key or owner[part] is None:
        return owner.lc.key(part)
    return owner.lc.value(part)


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


def _position(text: str, index: int) -> tuple[int, int]:
    """1-based (line, col) of character ``index`` of ``text``."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def read_text(path: Path) -> str:
    """The spec's text, guarded: a regular file (a FIFO, a device or a symlink loop is refused without
    being opened; issue 41) of at most :data:`MAX_BYTES`, UTF-8 (a BOM is dropped), no character that
    :func:`compiler.text.forbidden_char` forbids. Raises :class:`SpecError`, located at the offending
    byte or character."""
    shown = display_path(path)
    try:
        data = read_regular(path, cap=MAX_BYTES, shown=shown)
    except FileProblem as err:
        msg = MSG_TOO_LARGE.format(size=err.size, cap=MAX_BYTES) if err.kind == "too_large" else \
            MSG_READ.format(err=err.reason)
        raise SpecError([Issue(shown, None, None, "", msg)]) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise SpecError([Issue(shown, line, col, "", MSG_NOT_UTF8.format(byte=data[err.start]))]) from None
    text = text.removeprefix("\ufeff")
    issues = []
    start = 0
    while len(issues) < 5 and (i := first_forbidden(text[start:])) is not None:
        i += start
        line, col = _position(text, i)
        issues.append(Issue(shown, line, col, "", MSG_CONTROL.format(code=ord(text[i]))))
        start = i + 1
    if issues:
        raise SpecError(issues)
    issue = _yaml_version_issue(text, shown)
    if issue is not None:
        raise SpecError([issue])
    return text


def _yaml_version_issue(text: str, shown: str) -> Issue | None:
    """A located issue for a ``%YAML`` directive whose version ruamel.yaml cannot read (e.g. 1.3: it
    asserts, which would be a traceback), else None. Directives stand at column 1 in a document's
    prologue: before the first line that is not a directive, a comment or blank, and again after a
    ``...`` document end marker. Malformed directives are left to the parser's located error."""
    prologue = True
    for n, line in enumerate(text.split("\n"), 1):  # YAML 1.2's line breaks: LF and CR LF (not U+2028)
        line = line.removesuffix("\r")
        if prologue:
            if line.startswith("%"):
                m = re.match(r"%YAML[ \t]+(\d+)\.(\d+)(?=[ \t]|$|#)", line)
                if m and f"{int(m[1])}.{int(m[2])}" not in YAML_VERSIONS:
                    return Issue(shown, n, m.start(1) + 1, "", MSG_YAML_VERSION.format(version=f"{m[1]}.{m[2]}"))
                continue
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            prologue = False
        elif re.match(r"\.\.\.(?:[ \t]|$)", line):
            prologue = True
    return None


def _guard_nodes(root: Any, shown: str) -> None:
    """Walk the composed YAML graph as the loader will expand it: depth, alias expansion (nodes and
    bytes), tags, explicitly tagged scalars that do not parse, keys with line breaks, control characters
    in decoded scalars, integers beyond ±2^53.

    Stops at the first problem, located at its node; an alias bomb stops after :data:`MAX_NODES`
    visits or :data:`MAX_SCALAR_BYTES` bytes of expanded text, in milliseconds, before anything is
    constructed (issue 41: a 108 KB spec of aliases of a long string expanded to gigabytes).
    """
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode
    from ruamel.yaml.resolver import VersionedResolver

    resolver = VersionedResolver()
    count = 0
    total = 0  # bytes of scalar text, each alias counted every time it is used
    sizes: dict[int, int] = {}  # id(scalar node) -> UTF-8 bytes, measured (and checked) once

    def fail(node: Any, message: str, loc: tuple = ()) -> None:
        mark = node.start_mark
        raise SpecError([Issue(shown, mark.line + 1, mark.column + 1, dotted(loc), message)])

    stack: list[tuple[Any, int, Any, tuple]] = [(root, 1, root, ())]
    while stack:
        node, depth, top, loc = stack.pop()
        count += 1
        if count > MAX_NODES:
            fail(top, MSG_EXPANSION.format(limit=MAX_NODES))  # at the top-level key that expands
        if depth > MAX_DEPTH:
            fail(node, MSG_DEPTH.format(limit=MAX_DEPTH))
        tag = node.tag if isinstance(node.tag, str) else getattr(node.tag, "value", str(node.tag))
        if tag not in ALLOWED_TAGS:
            fail(node, MSG_TAG.format(tag=tag))
        if isinstance(node, ScalarNode):
            size = sizes.get(id(node))
            if size is None:  # first visit: the decoded text ("\e", "\x85", "\uFFFE" escapes) obeys the raw rule
                # ruamel's round-trip scanner marks the folds of a folded (>) scalar with BEL; such a scalar
                # has no escapes and its raw text passed read_text, so the markers are not the writer's
                text = node.value.replace("\a", "") if node.style == ">" else node.value
                bad = first_forbidden(text)
                if bad is not None:
                    fail(node, MSG_SCALAR_CONTROL.format(code=describe(text[bad])), loc)
                size = sizes[id(node)] = len(node.value.encode("utf-8"))
            total += size
            if total > MAX_SCALAR_BYTES:
                fail(top, MSG_BYTES.format(limit=MAX_SCALAR_BYTES), loc[:1])  # at the top-level key that expands
            short = tag.removeprefix(_STD)
            if short == "timestamp":  # 2026-13-45 looks like a date to the resolver, not to datetime
                from ruamel.yaml.constructor import RoundTripConstructor

                try:
                    RoundTripConstructor(loader=None).construct_object(node, deep=True)
                except (ValueError, OverflowError) as err:
                    fail(node, MSG_BAD_DATE.format(value=node.value, err=err))
            if short in ("int", "float", "bool", "null"):
                implicit = resolver.resolve(ScalarNode, node.value, (True, False))
                implicit = implicit if isinstance(implicit, str) else getattr(implicit, "value", str(implicit))
                if implicit != tag and not (short == "float" and implicit == _STD + "int"):
                    fail(node, MSG_TAG_VALUE.format(value=node.value, tag="!!" + short))
                if short == "int":
                    try:
                        value = int(node.value.replace("_", ""), 0)
                    except ValueError:
                        value = 0  # sexagesimal and other YAML 1.1 forms: ruamel reads them
                    if abs(value) >= MAX_INT:
                        fail(node, MSG_BIG_INT.format(value=node.value))
        elif isinstance(node, MappingNode):
            for key, value in reversed(node.value):
                if not isinstance(key, ScalarNode):
                    fail(key, MSG_KEY_NOT_SCALAR)
                if isinstance(key, ScalarNode) and ("\n" in key.value or "\r" in key.value
                                                    or first_forbidden(key.value) is not None):
                    fail(key, MSG_KEY_BREAK.format(key=terminal_safe(repr(key.value))))
                sub = loc + (key.value,)
                stack.append((value, depth + 1, key if node is root else top, sub))
                stack.append((key, depth + 1, key if node is root else top, loc))
        elif isinstance(node, SequenceNode):
            stack.extend((item, depth + 1, top, loc + (i,)) for i, item in reversed(list(enumerate(node.value))))


def read_yaml(path: Path) -> tuple[Any, Any]:
    """Parse ``path``; return (plain data, ruamel document). Raises :class:`SpecError`.

    The text passes :func:`read_text` (size, encoding, characters) and the composed node graph
    :func:`_guard_nodes` (depth, aliases, tags, keys, integers) before anything is constructed, so
    no input reaches the constructor that could make it raise an unlocated error or run for long.
    """
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    shown = display_path(path)
    text = read_text(path)
    try:
        y = _yaml()
        root = y.compose(text)  # parsed once: guarded as nodes, then constructed from the same nodes
        if root is not None:
            _guard_nodes(root, shown)
        doc = y.constructor.construct_document(root) if root is not None else None
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
    except RecursionError:
        raise SpecError([Issue(shown, None, None, "", MSG_DEPTH.format(limit=MAX_DEPTH))]) from None
    except YAMLError as err:  # reader errors and the like: located by their own position when they have one
        mark = getattr(err, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise SpecError([Issue(shown, line, col, "", f"YAML error: {err}")]) from None
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
            msg = e["msg"].removeprefix("Value error, ")  # our validators' messages stand alone
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
