"""The ``python`` system kind: a vendor's Python function ``score_batch(items) -> {id: score}`` (issue 36 §3).
Its spec model: :mod:`compiler.blocks.python_function`; its runtime adapter: :mod:`runtime.systems.python_function`.

Nothing here imports vendor code. ``function: path.py:name`` names a file in the spec's folder: its sha256 is
locked and the function is found in its AST (a top-level ``def``, not ``async def``). ``function: module:name``
names a module of the installed distribution ``package``: the module's file is found in the distribution's file
list (``importlib.metadata``), the function in its AST, and the distribution's version is in the resolved
system, so an upgrade changes the spec digest (``audit execute`` exits 3 naming the key), never silently.

The vendor's code runs in the spec's folder (its working directory, first on ``sys.path``), so a file can import
modules of that folder: every module of the spec's folder that the file imports, directly or through another such
module, is locked too (``modules``: path and sha256 of each, read from the ASTs, never run), so editing a helper
module changes the spec digest like editing the file itself.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from compiler.blocks import python_function as block
from compiler.errors import Issue
from compiler.hashing import digest
from compiler.load import LoadedSpec
from compiler.paths import resolve_inside
from compiler.systems.base import CORE, FileRef, Requires, SystemKind, file_ref, score_resolution, system_kind

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_FILE_FORM = re.compile(rf"^(?P<path>[^:]+\.py):(?P<name>{_NAME})$")
_MODULE_FORM = re.compile(rf"^(?P<module>{_NAME}(?:\.{_NAME})*):(?P<name>{_NAME})$")

MSG_FUNCTION_FORM = ("function {value!r} is neither 'path/to/file.py:name' (a file in the spec's folder) nor "
                     "'module:name' (with package)")
MSG_NO_DEF = "{where} has no top-level 'def {name}' (functions defined there: {found})"
MSG_ASYNC = "{where}: {name} is an 'async def'; the function must be a plain def (it is called, not awaited)"
MSG_SYNTAX = "{where} is not valid Python: {err}"
MSG_PACKAGE_NEEDED = "function {value!r} names a module; give package, the distribution that installs it"
MSG_PACKAGE_WITH_FILE = "package is only for function: module:name; {value!r} names a file of the spec's folder"
MSG_NOT_INSTALLED = "package {package!r} is not installed (importlib.metadata finds no distribution of that name)"
MSG_NO_MODULE = ("package {package!r} {version} has no module {module!r} in its file list (looked for {looked}); "
                 "modules it installs: {found}")


def parse_function(value: str) -> tuple[str, str, str] | None:
    """``("file", path, name)``, ``("module", module, name)`` or None for a ``function`` value."""
    m = _FILE_FORM.match(value)
    if m:
        return "file", m.group("path"), m.group("name")
    m = _MODULE_FORM.match(value)
    if m:
        return "module", m.group("module"), m.group("name")
    return None


def find_def(source: bytes, name: str, where: str) -> str | None:
    """None when ``source`` has a top-level ``def name``, else what is wrong (read from the AST, never run)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as err:
        return MSG_SYNTAX.format(where=where, err=f"{getattr(err, 'msg', err)} (line {getattr(err, 'lineno', '?')})")
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    node = defs.get(name)
    if isinstance(node, ast.AsyncFunctionDef):
        return MSG_ASYNC.format(where=where, name=name)
    if node is None:
        return MSG_NO_DEF.format(where=where, name=name, found=", ".join(sorted(defs)) or "none")
    return None


def _imported(source: bytes) -> list[str]:
    """Dotted names a module's source imports at level 0 (``import a.b`` -> ``a.b``; ``from a import b`` -> ``a``
    and ``a.b``), from its AST; [] when it does not parse (its own issue)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
    return names


def local_modules(folder: Path, source: bytes, own: str | None = None) -> list[str]:
    """The modules of the spec's ``folder`` that ``source`` imports, transitively, as paths relative to it
    (posix, sorted): for a dotted name ``a.b``, ``a.py`` or ``a/__init__.py`` and ``a/b.py`` or
    ``a/b/__init__.py`` where they exist inside the folder. ``own`` (the vendor's file itself) is left out.
    Modules found elsewhere (the standard library, installed packages) are not the folder's and are left out:
    a package's version is locked through ``package``."""
    found: set[str] = set()
    todo = [source]
    while todo:
        for name in _imported(todo.pop()):
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):
                base = "/".join(parts[:depth])
                for ref in (f"{base}.py", f"{base}/__init__.py"):
                    path, err = resolve_inside(folder, ref)
                    if err is None and path.is_file() and ref != own and ref not in found:
                        found.add(ref)
                        todo.append(path.read_bytes())
    return sorted(found)


def module_file(package: str, module: str) -> tuple[str, Path | None, str | None]:
    """(version, file of ``module`` in the distribution's file list, problem) of an installed distribution."""
    from importlib import metadata

    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        return "", None, MSG_NOT_INSTALLED.format(package=package)
    version = dist.version
    base = module.replace(".", "/")
    looked = [f"{base}.py", f"{base}/__init__.py"]
    files = {str(f).replace("\\", "/"): f for f in (dist.files or [])}
    for want in looked:
        if want in files:
            return version, Path(dist.locate_file(files[want])), None
    found = sorted({f[:-3].replace("/__init__", "").replace("/", ".") for f in files if f.endswith(".py")
                    and ".dist-info/" not in f})
    return version, None, MSG_NO_MODULE.format(package=package, version=version, module=module,
                                               looked=" or ".join(looked), found=", ".join(found[:20]) or "none")


def python_fingerprint(resolved: dict[str, Any]) -> dict[str, str]:
    """``{algorithm, digest}`` of function, version, batch_size and the file's sha256 or the package's version, and
    of the spec folder's modules the file imports (``modules``, when there are any)."""
    return digest({"function": resolved["function"], "version": resolved["version"],
                   "batch_size": resolved["batch_size"], "file": resolved["file"], "package": resolved["package"],
                   **({"modules": resolved["modules"]} if resolved.get("modules") else {})})


@system_kind
class Python(SystemKind):
    """A vendor's Python function (issue 36 §3): runs vendor code, so ``audit execute`` needs ``--allow-exec``."""

    id = "python"
    model = block.System
    remote = True  # execution.systems.<id> tunes it: timeout_s per call, concurrency (processes)
    runs_code = True
    paired_only = True  # résumés under opaque ids, variants in one plan batch
    provides = frozenset({"answers"})  # read by the one answer reader; the llm_validity family reports them

    def requires(self, system: Any) -> Requires:
        """Nothing beyond the core install (the child process is this interpreter)."""
        return CORE

    def files(self, i: int, system: Any) -> list[FileRef]:
        parsed = parse_function(system.function)
        if parsed and parsed[0] == "file":
            return [(("systems", i, "function"), parsed[1], "file")]
        return []

    def issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        out = super().issues(ls, i, system)
        at = ("systems", i)
        parsed = parse_function(system.function)
        if parsed is None:
            return out + [ls.issue(at + ("function",), MSG_FUNCTION_FORM.format(value=system.function))]
        form, where, name = parsed
        if form == "file":
            if system.package is not None:
                out.append(ls.issue(at + ("package",), MSG_PACKAGE_WITH_FILE.format(value=system.function)))
            path, err = resolve_inside(ls.folder, where)
            if err is None:  # a missing or escaping file is the file reference's own issue
                problem = find_def(path.read_bytes(), name, where)
                if problem:
                    out.append(ls.issue(at + ("function",), problem))
            return out
        if system.package is None:
            return out + [ls.issue(at + ("function",), MSG_PACKAGE_NEEDED.format(value=system.function))]
        version, path, problem = module_file(system.package, where)
        if problem:
            return out + [ls.issue(at + ("package",), problem)]
        problem = find_def(path.read_bytes(), name, f"module {where!r} of {system.package} {version}")
        if problem:
            out.append(ls.issue(at + ("function",), problem))
        return out

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        form, where, _ = parse_function(system.function)  # validate() ran first
        file = package = None
        modules: list[dict[str, str]] = []
        if form == "file":
            file = file_ref(ls.folder, where)
            path, _ = resolve_inside(ls.folder, where)
            own = Path(where).as_posix()
            modules = [file_ref(ls.folder, ref) for ref in local_modules(ls.folder, path.read_bytes(), own=own)]
        else:
            version, _, _ = module_file(system.package, where)
            package = {"name": system.package, "version": version}
        resolved = {
            "id": system.id, "kind": system.kind, "function": system.function, "version": system.version,
            "batch_size": system.batch_size, "file": file, "package": package,
            "max_invalid_retries": system.max_invalid_retries,
            "score_range": list(system.score_range), **score_resolution(system),
            **({"modules": modules} if modules else {}),  # absent without any: earlier locks keep their digest
        }
        resolved["fingerprint"] = python_fingerprint(resolved)
        return resolved

    def source(self, resolved: dict[str, Any]) -> str:
        return self.program(resolved)

    def program(self, resolved: dict[str, Any]) -> str:
        """``function: tools/x.py:score_batch (sdk 3.1); tools/x.py sha256 <hex>`` or the package and its version."""
        text = f"function: {resolved['function']} ({resolved['version']})"
        if resolved["file"]:
            mods = "".join(f"; imports {m['path']} sha256 {m['sha256']}" for m in resolved.get("modules") or [])
            return f"{text}; {resolved['file']['path']} sha256 {resolved['file']['sha256']}{mods}"
        return f"{text}; package {resolved['package']['name']} {resolved['package']['version']}"
