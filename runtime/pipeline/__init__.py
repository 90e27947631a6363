"""The run pipeline: one loop over a typed :class:`~runtime.run.context.RunContext`.

``generate -> score -> rank -> families -> report -> seal``; the run folder
(:mod:`runtime.run.folder`), the metadata builders (:mod:`runtime.pipeline.metadata`), the
``--fail-on`` gate (:mod:`runtime.pipeline.gate`) and the run's ``summary.json``
(:mod:`runtime.pipeline.summary`) live in one module each.
"""

from runtime.pipeline.gate import gate_tripped
from runtime.pipeline.run import RunResult, execute, job_texts

__all__ = ["RunResult", "execute", "gate_tripped", "job_texts"]
