"""Every random draw of a run derives from the spec's seed through this module.

``rng(seed, "bootstrap", system, condition, metric, variant)`` returns a ``numpy.random.Generator`` whose stream
depends only on the spec seed and the labels, never on call order, so adding a metric or a variant
does not shift the draws of another one (seed 000 §3.5: "All bootstrap resampling uses a fixed
random seed for reproducibility").
"""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(seed: int, *labels: object) -> int:
    """Return a 64-bit integer derived from ``seed`` and the labels (stable across platforms).

    Parameters
    ----------
    seed : int
        The spec's seed (``seed:`` in the audit spec), any non-negative integer.
    *labels : object
        What the draw is for; converted with ``str``. Order matters.
    """
    h = hashlib.sha256(str(int(seed)).encode())
    for label in labels:
        h.update(b"\x1f" + str(label).encode())
    return int.from_bytes(h.digest()[:8], "big")


def rng(seed: int, *labels: object) -> np.random.Generator:
    """Return a PCG64 generator seeded by :func:`derive_seed`."""
    return np.random.default_rng(np.random.SeedSequence(derive_seed(seed, *labels)))
