"""The contract every system-under-test adapter follows."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

import pandas as pd


@dataclass
class ScoreRequest:
    """What a system scores.

    Attributes
    ----------
    jobs : dict
        job id -> job description text (``None`` when the spec gives no text).
    resumes : pandas.DataFrame or None
        One row per resume: ``job_id, cv_id, variant, is_true_match, text`` (+ axis columns);
        ``None`` when the spec has no generator (precomputed systems bring their own cells).
    variants : list of str
        Variant ids of the spec, reference first.
    spec_folder : pathlib.Path
        Folder the spec's relative paths are resolved against.
    batch_size : int
        Encoder batch size (non-semantic).
    progress : callable, optional
        ``progress(description, total)`` returns an ``advance(n)`` callable for a progress bar.
    """

    jobs: dict[str, str | None]
    resumes: pd.DataFrame | None
    variants: list[str]
    spec_folder: Path
    batch_size: int = 64
    progress: Callable[[str, int], Callable[[int], None]] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    #: Run settings some adapters need (LLM systems: seed, job titles and families, cache path,
    #: concurrency, retries, timeout).
    options: dict[str, Any] = field(default_factory=dict)
    #: Extra files for the run folder, name -> data frame (LLM systems: every raw answer).
    artifacts: dict[str, Any] = field(default_factory=dict)


class SystemAdapter:
    """Scores every (job, cv, variant) cell of a correspondence-audit matrix.

    ``score`` returns a frame with columns ``job_id, cv_id, variant, score, is_true_match``
    (``is_true_match`` 0/1 or NaN when unknown), one row per cell, scores on the system's
    ``score_range``. Adapters may add diagnostics to ``request.info``.
    """

    kind: ClassVar[str] = ""

    def __init__(self, resolved: dict[str, Any]):
        self.resolved = resolved
        self.id: str = resolved["id"]

    def score(self, request: ScoreRequest) -> pd.DataFrame:  # pragma: no cover - interface
        raise NotImplementedError
