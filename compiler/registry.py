"""One registry mechanism for every plug-in: audit families, designs and system kinds (issue 28 §1).

A plug-in is declared **once**, on the compiler side, by a class that names its ``id`` and what it
needs or provides (:class:`compiler.families.base.Family`, :class:`compiler.designs.base.Design`,
:class:`compiler.systems.base.SystemKind`); the runtime half binds to that declaration by id and reads
it (``runtime.families.family``, ``runtime.designs.design``, ``runtime.systems.system``). The classes
of a package register themselves when their module is imported; :meth:`Registry.load` imports every
module of the package (:mod:`pkgutil`) and every installed plug-in (:func:`plugin_modules`), so adding
a plug-in adds files and touches no list (inspect_ai's ``_util/registry.py`` pattern).

Installed plug-ins
------------------
A distribution declares one entry point per plug-in package in the group :data:`ENTRY_POINT_GROUP`::

    [audit_compiler.plugins]
    keyword_overlap = keyword_overlap

The package holds up to three modules, one per side, imported only by that side: ``blocks`` (its spec
models: pydantic only, read when :mod:`compiler.spec` builds the spec model), ``compiler`` (its
declarations: checks, resolution, plan tasks) and ``runtime`` (its runtime halves). A module that fails
to import is skipped with a warning naming it; a spec that uses its kind then meets the usual
"unknown kind; allowed: ..." refusal.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import pkgutil
import warnings
from dataclasses import dataclass
from typing import Callable, Generic, Iterable, Iterator, Mapping, TypeVar

from compiler.errors import AuditError

#: Entry-point group of installed plug-ins (``[audit_compiler.plugins]`` in ``entry_points.txt``).
ENTRY_POINT_GROUP = "audit_compiler.plugins"
#: The modules a plug-in package may hold, one per side.
SIDES = ("blocks", "compiler", "runtime")

MSG_TWICE = "{what} {name!r} is registered twice: by {first} and by {second}; rename one of them"
MSG_PLUGIN_IMPORT = "plug-in {name!r} ({module}) failed to import and is skipped: {err}"
MSG_NO_DECLARATION = ("{half} binds to {what} {name!r}, which no compiler declaration declares (declared: {known}); "
                      "a plug-in declares its id once, in its compiler half")
MSG_NO_HALF = "{what} {names} declared in the compiler but with no runtime half: a plug-in has both halves"
MSG_NO_ID = "{cls} declares no id: a {what} names itself with a class attribute id = '...'"

T = TypeVar("T")

#: What a run can provide to an audit family: a design or a system kind provides it, a family needs it
#: (:class:`Needs`). ``tool_text``: the tool wrote the text the systems scored; ``llm_generation``: LLM
#: agents wrote it; ``answers``: the answers of a system read by the one answer reader (LLM screeners; ``http``,
#: ``command`` and ``python`` systems: issues 35, 36); ``applicants``: historical applicants read
#: from the employer's file (sex, race/ethnicity, outcome per person; issue 34).
PAIRED, UNPAIRED, ANSWERS, LLM_GENERATION, TOOL_TEXT, APPLICANTS = (
    "paired", "unpaired", "answers", "llm_generation", "tool_text", "applicants")


class PluginError(AuditError):
    """The plug-ins contradict each other: an id registered twice, a runtime half without its compiler
    declaration (or the reverse), an ``after`` naming an unknown family or one that runs later
    (exit 1: nothing about the spec can fix it)."""

    exit_code = 1


class PluginWarning(UserWarning):
    """An installed plug-in could not be imported (it is skipped)."""


_imported: dict[str, list[str]] = {}


def plugin_modules(side: str) -> list[str]:
    """Import the ``side`` module (``blocks``, ``compiler`` or ``runtime``) of every installed plug-in
    package, once per process, and return the names imported.

    A package without that module is skipped silently (a plug-in may have no spec block); one whose
    module fails to import is skipped with a :class:`PluginWarning` naming it.
    """
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    if side in _imported:
        return list(_imported[side])
    done: list[str] = []
    _imported[side] = done  # set first: a plug-in importing the registry again finds its entry
    for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        module = f"{ep.value.split(':')[0]}.{side}"
        try:
            if importlib.util.find_spec(module) is None:
                continue
        except (ImportError, ValueError):  # the package itself is missing or broken
            pass
        try:
            importlib.import_module(module)
        except Exception as err:  # noqa: BLE001 - any failure of a third party's module: skip it, say which
            warnings.warn(MSG_PLUGIN_IMPORT.format(name=ep.name, module=module, err=f"{type(err).__name__}: {err}"),
                          PluginWarning, stacklevel=2)
            continue
        done.append(module)
    return list(done)


def import_package(package: str, skip: Iterable[str] = ()) -> None:
    """Import every module of ``package`` whose name does not start with ``_`` and is not in ``skip``."""
    pkg = importlib.import_module(package)
    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name not in skip and not mod.name.startswith("_"):
            importlib.import_module(f"{package}.{mod.name}")


def _where(obj: object) -> str:
    """``module.Class`` of a registered class, or of the class of a registered instance (a declaration)."""
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


class Registry(Generic[T]):
    """Plug-ins of one kind, by id, in registration order.

    Parameters
    ----------
    what : str
        What an id names, for messages (``"audit family"``, ``"design"``, ``"system kind"``).
    package : str
        The package whose modules hold the built-in plug-ins.
    side : str
        Which module of an installed plug-in registers here (``"compiler"`` or ``"runtime"``).
    skip : iterable of str
        Modules of ``package`` that are not plug-ins (e.g. ``"base"``).
    """

    def __init__(self, what: str, package: str, *, side: str = "compiler", skip: Iterable[str] = ("base",)):
        self.what, self.package, self.side, self.skip = what, package, side, frozenset(skip)
        self._items: dict[str, T] = {}
        self._loaded = False

    def add(self, name: str, item: T) -> T:
        """Register ``item`` under ``name``.

        Raises
        ------
        PluginError
            ``name`` is registered already (the message names both registrants).
        """
        if name in self._items:
            raise PluginError(MSG_TWICE.format(what=self.what, name=name, first=_where(self._items[name]),
                                               second=_where(item)))
        self._items[name] = item
        return item

    def declare(self, cls: type) -> type:
        """Class decorator for a compiler declaration: registers an instance of ``cls`` under ``cls.id``.

        Raises
        ------
        PluginError
            ``cls`` declares no id, or its id is registered already.
        """
        name = getattr(cls, "id", "")
        if not name:
            raise PluginError(MSG_NO_ID.format(cls=_where(cls), what=self.what))
        self.add(name, cls())
        return cls

    def load(self) -> dict[str, T]:
        """Id -> plug-in in registration order, after importing every module of the package and the
        ``side`` module of every installed plug-in."""
        if not self._loaded:
            self._loaded = True
            import_package(self.package, self.skip)
            plugin_modules(self.side)
        return dict(self._items)

    def binder(self, declared: "Registry") -> Callable[[str], Callable[[type], type]]:
        """Decorator factory for the runtime halves of the plug-ins ``declared`` holds: ``@bind("effects")``
        registers the class under that id and sets ``cls.id`` and ``cls.declaration`` (the compiler
        declaration, which the half reads for what it needs or provides: nothing is declared twice).

        Raises
        ------
        PluginError
            No compiler declaration has that id, or the id is bound twice.
        """

        def bind(name: str) -> Callable[[type], type]:
            def deco(cls: type) -> type:
                decl = declared.load().get(name)
                if decl is None:
                    raise PluginError(MSG_NO_DECLARATION.format(half=_where(cls), what=declared.what, name=name,
                                                                known=", ".join(sorted(declared.load()))))
                cls.id, cls.declaration = name, decl
                self.add(name, cls)
                return cls

            return deco

        return bind

    def check_halves(self, declared: "Registry") -> None:
        """Every declaration of ``declared`` has its runtime half here (and, by :meth:`binder`, the reverse).

        Raises
        ------
        PluginError
            Naming each declaration without a runtime half.
        """
        missing = [n for n in declared.load() if n not in self.load()]
        if missing:
            raise PluginError(MSG_NO_HALF.format(what=declared.what, names=", ".join(
                f"{n!r} ({_where(declared.load()[n])})" for n in missing)))

    def get(self, name: str) -> T:
        """The plug-in registered under ``name``.

        Raises
        ------
        KeyError
            Naming the registered ids, when ``name`` is not one of them.
        """
        items = self.load()
        if name not in items:
            raise KeyError(f"unknown {self.what} {name!r}; registered: {', '.join(sorted(items))}")
        return items[name]


class Declared(Mapping[str, T]):
    """Id -> plug-in of a :class:`Registry`, read at each use, so that the plug-ins registered while
    other plug-in modules were still importing are in it (a snapshot taken at import time would miss
    them).

    Parameters
    ----------
    registry : Registry
        The registry it reads.
    order : callable, optional
        Turns the registered items (in registration order) into the id -> item mapping shown, e.g. in
        run order; it may raise :class:`PluginError` for an order that cannot hold.
    """

    def __init__(self, registry: Registry[T], order: Callable[[Iterable[T]], dict[str, T]] | None = None):
        self._registry, self._order = registry, order

    def _items(self) -> dict[str, T]:
        items = self._registry.load()
        return self._order(items.values()) if self._order is not None else items

    def __getitem__(self, name: str) -> T:
        return self._items()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return f"{self._registry.what}s({', '.join(self)})"


@dataclass(frozen=True)
class Needs:
    """What an audit family needs from the design and the systems of a run: any one of several
    alternatives, each a set of provided words (``paired``, ``unpaired``, ``answers``...), all of
    whose words must be provided.

    ``Needs.of("paired")`` needs paired candidates; ``Needs.of("paired") | Needs.of("unpaired")`` needs
    either (issue 28 §2).
    """

    alternatives: tuple[frozenset[str], ...]

    @classmethod
    def of(cls, *words: str) -> "Needs":
        """One alternative: every word of ``words``."""
        return cls((frozenset(words),))

    def __or__(self, other: "Needs") -> "Needs":
        return Needs(self.alternatives + tuple(a for a in other.alternatives if a not in self.alternatives))

    def met(self, provides: Iterable[str]) -> bool:
        """Whether ``provides`` holds every word of at least one alternative."""
        have = frozenset(provides)
        return any(a <= have for a in self.alternatives)

    def words(self) -> frozenset[str]:
        """Every word any alternative names."""
        return frozenset().union(*self.alternatives)

    def describe(self, word: Callable[[str], str] = str) -> str:
        """The alternatives in words: ``paired candidates or unpaired profiles``."""
        return " or ".join(" and ".join(word(w) for w in sorted(a)) for a in self.alternatives)

    def missing(self, provides: Iterable[str]) -> str:
        """What is missing, in words (the whole of each alternative when there are several, else the
        words of the one alternative that ``provides`` lacks)."""
        have = frozenset(provides)
        if len(self.alternatives) == 1:
            return " and ".join(sorted(self.alternatives[0] - have))
        return self.describe()
