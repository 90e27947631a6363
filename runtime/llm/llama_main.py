"""``python -m llama_cpp.server`` with llama.cpp's extra weight buffer types off.

A llama-cpp-python wheel built with ``GGML_NATIVE`` on a CPU that lists AMX repacks the weights into
AMX tiles (an "extra buffer type"). In a virtual machine that lists AMX in ``/proc/cpuinfo`` but does
not grant it, the first batch of more than one token faults (``ldtilecfg``, SIGSEGV): the server dies
on the first request and every client sees "connection error". Loading every model with
``use_extra_bufts = False`` keeps the plain CPU buffers: the same answers on every machine, whatever
the build found. :func:`runtime.llm.serve.server_command` runs this module; its arguments are the
server's own (``python -m runtime.llm.llama_main --model ... --port ...``).
"""

from __future__ import annotations

import runpy


def _without_extra_buffers() -> None:
    """Make every model llama-cpp-python loads default to ``use_extra_bufts = False``."""
    import llama_cpp
    import llama_cpp.llama

    defaults = llama_cpp.llama_model_default_params

    def model_params():
        params = defaults()
        params.use_extra_bufts = False
        return params

    llama_cpp.llama_model_default_params = model_params
    llama_cpp.llama.llama_cpp.llama_model_default_params = model_params


def main() -> None:
    """Patch the model defaults, then run ``llama_cpp.server`` as ``__main__`` with this argv."""
    _without_extra_buffers()
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
