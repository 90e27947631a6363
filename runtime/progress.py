"""Rich progress bars for long stages (generation, embedding, bootstrap); silent with ``--quiet``."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

Advance = Callable[[int], None]


class Progress:
    """``with Progress(quiet=False) as p: advance = p.task("embedding", 5000); advance(64)``."""

    def __init__(self, *, quiet: bool = False):
        self.quiet = quiet
        self._bar = None

    def __enter__(self) -> "Progress":
        if not self.quiet:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress,
                                       TextColumn, TimeElapsedColumn, TimeRemainingColumn)

            from rich.console import Console

            # progress goes to stderr so stdout keeps only the results
            self._bar = RichProgress(TextColumn("[bold]{task.description:<28}"), BarColumn(),
                                     MofNCompleteColumn(), RateColumn(), TimeElapsedColumn(),
                                     TimeRemainingColumn(),
                                     console=Console(stderr=True), transient=False)
            self._bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def task(self, description: str, total: int) -> Advance:
        """Add a bar; return the function that advances it."""
        if self._bar is None:
            return lambda n=1: None
        from rich.markup import escape

        tid = self._bar.add_task(escape(description), total=total)  # the column formats it as markup
        return lambda n=1: self._bar.advance(tid, n)


def RateColumn():
    """A rich column showing items per second (LLM calls/s, texts/s); the ETA column follows it."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class _Rate(ProgressColumn):
        def render(self, task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{speed:.2f}/s", style="progress.data.speed")

    return _Rate()


@contextmanager
def stage_timer(timings: dict[str, float], name: str) -> Iterator[None]:
    """Record the wall time of a stage, in seconds, into ``timings[name]``."""
    import time

    t0 = time.perf_counter()
    try:
        yield
    finally:
        timings[name] = round(time.perf_counter() - t0, 3)
