"""Run state, below the plug-ins: the run folder (:mod:`runtime.run.folder`: atomic writes, the
artifacts list, ``run.json``, the run lock) and the typed context every stage and plug-in reads
(:mod:`runtime.run.context`). Imports no plug-in, no pipeline and no provenance module."""
