"""Spec models of the plug-ins, one module each: what a plug-in adds to the YAML an auditor writes.

A module of this package (or the ``blocks`` module of an installed plug-in,
:func:`compiler.registry.plugin_modules`) declares any of three pairs of names:

- ``KEY`` and ``Block``: the ``analysis.<KEY>`` block of an audit family (a pydantic model with
  ``extra="forbid"``); :mod:`compiler.spec` adds every block to its ``Analysis`` model.
- ``KIND`` and ``System``: the model of ``systems[i]`` for ``kind: <KIND>`` (its ``kind`` field is
  ``Literal[KIND]``); :mod:`compiler.spec` builds the ``systems`` union from them.
- ``GENERATOR`` and ``Candidates``: the model of ``candidates`` for ``generator: <GENERATOR>`` (its
  ``generator`` field is ``Literal[GENERATOR]``); :mod:`compiler.spec` builds the ``candidates`` union.

So a block is validated, located in errors and generated into ``schema/`` like any other key, and
nothing outside the plug-in's own files lists it. The built-in modules also declare ``ORDER``, their
position among the built-in kinds or generators (the unions and every list of kinds follow it);
installed plug-ins come after them, in the order of their entry points. Modules whose name starts
with ``_`` hold shared fields and declare nothing.

Block modules import only pydantic and leaf modules (:mod:`compiler.spectypes`; a private module of
this package): the spec models import them, so a block that imported :mod:`compiler.spec` would be
a cycle.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import typing
from types import ModuleType

from pydantic import BaseModel

from compiler.registry import MSG_TWICE, PluginError, plugin_modules

#: The pairs of names a blocks module may declare: (name of the id, name of the model, what it is,
#: the model's field that carries the id as a ``Literal``; None: no such field).
PAIRS: tuple[tuple[str, str, str, str | None], ...] = (
    ("KEY", "Block", "analysis block", None),
    ("KIND", "System", "system kind", "kind"),
    ("GENERATOR", "Candidates", "generator", "generator"),
)
#: Where a built-in module without ``ORDER`` goes: after those that declare one (by module name).
_LAST = 1_000_000

MSG_NO_MODEL = "{module} declares {id_name} = {value!r} but no {model_name} model"
MSG_TAG = ("{module}: the {what} {value!r} has a model whose {field!r} field is not Literal[{value!r}] "
           "(got {got}); the spec would not dispatch to it")


def _modules() -> list[ModuleType]:
    """The modules of this package (by ``ORDER``, then name), then the installed plug-ins' ``blocks``."""
    own = [importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__)
           if not info.name.startswith("_")]
    own.sort(key=lambda m: (getattr(m, "ORDER", _LAST), m.__name__))
    return own + [importlib.import_module(name) for name in plugin_modules("blocks")]


def _check_tag(module: ModuleType, what: str, value: str, model: type[BaseModel], field: str) -> None:
    info = model.model_fields.get(field)
    got = typing.get_args(info.annotation) if info is not None else None
    if got != (value,):
        raise PluginError(MSG_TAG.format(module=module.__name__, what=what, value=value, field=field,
                                         got="no such field" if info is None else info.annotation))


@functools.cache
def _declared() -> dict[str, dict[str, tuple[type[BaseModel], str]]]:
    """id name (``KEY``, ``KIND``, ``GENERATOR``) -> id -> (model, module name), in declaration order.

    Raises
    ------
    PluginError
        Two modules declare the same id, a module declares an id without its model, or a model's
        tag field does not carry its id.
    """
    out: dict[str, dict[str, tuple[type[BaseModel], str]]] = {pair[0]: {} for pair in PAIRS}
    for module in _modules():
        for id_name, model_name, what, field in PAIRS:
            value = getattr(module, id_name, None)
            if value is None:
                continue
            model = getattr(module, model_name, None)
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise PluginError(MSG_NO_MODEL.format(module=module.__name__, id_name=id_name, value=value,
                                                      model_name=model_name))
            seen = out[id_name]
            if value in seen:
                raise PluginError(MSG_TWICE.format(what=what, name=value, first=seen[value][1],
                                                   second=module.__name__))
            if field is not None:
                _check_tag(module, what, value, model, field)
            seen[value] = (model, module.__name__)
    return out


def blocks() -> dict[str, type[BaseModel]]:
    """``analysis`` key -> block model of every plug-in family (built-in and installed), sorted by key.

    Raises
    ------
    compiler.registry.PluginError
        When two modules declare the same key (exit 1).
    """
    return {key: model for key, (model, _) in sorted(_declared()["KEY"].items())}


def system_models() -> dict[str, type[BaseModel]]:
    """``systems[].kind`` -> spec model: the built-in kinds in their ``ORDER``, then installed plug-ins'.

    Raises
    ------
    compiler.registry.PluginError
        When two modules declare the same kind (exit 1).
    """
    return {kind: model for kind, (model, _) in _declared()["KIND"].items()}


def candidate_models() -> dict[str, type[BaseModel]]:
    """``candidates.generator`` -> spec model: the built-in generators in their ``ORDER``, then
    installed plug-ins'.

    Raises
    ------
    compiler.registry.PluginError
        When two modules declare the same generator (exit 1).
    """
    return {gen: model for gen, (model, _) in _declared()["GENERATOR"].items()}
