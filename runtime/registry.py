"""One registry of plug-in classes, keyed by name: system adapters (``@system("embedding")``),
designs (``@design("template")``) and audit families (``@family("effects")``).

The classes of a plug-in package register themselves when their module is imported; :meth:`load`
imports every module of the package (``pkgutil``), so adding a plug-in adds a module and touches no
list (inspect_ai's ``_util/registry.py`` pattern).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Callable, Generic, TypeVar

T = TypeVar("T", bound=type)


class Registry(Generic[T]):
    """Plug-in classes of one package, by name.

    Parameters
    ----------
    what : str
        What a name names, for messages (``"system kind"``, ``"design"``, ``"audit family"``).
    package : str
        The package whose modules hold the plug-ins.
    attribute : str
        The class attribute the decorator sets to the name (``"kind"`` or ``"id"``).
    skip : frozenset of str
        Modules of the package that are not plug-ins (e.g. ``"base"``).
    """

    def __init__(self, what: str, package: str, *, attribute: str = "id", skip: frozenset[str] = frozenset()):
        self.what, self.package, self.attribute, self.skip = what, package, attribute, skip
        self._classes: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Class decorator registering ``cls`` under ``name``.

        Raises
        ------
        ValueError
            When the name is registered twice.
        """

        def deco(cls: T) -> T:
            if name in self._classes:
                raise ValueError(f"{self.what} {name!r} registered twice")
            setattr(cls, self.attribute, name)
            self._classes[name] = cls
            return cls

        return deco

    def load(self) -> dict[str, T]:
        """Name -> class in registration order, after importing every module of the package."""
        pkg = importlib.import_module(self.package)
        for mod in pkgutil.iter_modules(pkg.__path__):
            if mod.name not in self.skip and not mod.name.startswith("_"):
                importlib.import_module(f"{self.package}.{mod.name}")
        return dict(self._classes)

    def get(self, name: str) -> T:
        """The class registered under ``name``.

        Raises
        ------
        KeyError
            Naming the registered names, when ``name`` is not one of them.
        """
        classes = self.load()
        if name not in classes:
            raise KeyError(f"unknown {self.what} {name!r}; registered: {', '.join(sorted(classes))}")
        return classes[name]
