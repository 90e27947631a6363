"""Spec blocks of plug-in audit families: ``analysis.<KEY>`` in the spec, one module each.

A family added after the seeds' four declares its spec block here, in a module of its own with two
names: ``KEY`` (the key under ``analysis:``) and ``Block`` (a pydantic model with
``extra="forbid"``). :mod:`compiler.spec` adds every block found here to its ``Analysis`` model, so
the block is validated, located in errors and generated into ``schema/`` like any other key, and
nothing outside the family's own files lists it. Block modules import only pydantic (the spec
models import them; a block that imported :mod:`compiler.spec` would be a cycle).
"""

from __future__ import annotations

import importlib
import pkgutil

from pydantic import BaseModel


def blocks() -> dict[str, type[BaseModel]]:
    """``analysis`` key -> block model of every plug-in family, sorted by key.

    Raises
    ------
    ValueError
        When two modules declare the same key.
    """
    out: dict[str, type[BaseModel]] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        key = getattr(module, "KEY", None)
        if key is None:
            continue
        if key in out:
            raise ValueError(f"two spec blocks declare analysis.{key}")
        out[key] = module.Block
    return dict(sorted(out.items()))
