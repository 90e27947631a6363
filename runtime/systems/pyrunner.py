"""The child process of a ``python`` system (issue 36 §3): run as ``python -c <this file's text> FORM WHERE NAME``
in the spec's folder, it reads the request lines (JSON, one per résumé) from stdin, calls the vendor's function
once with the list of items, and writes one line ``{"id", "score"}`` per entry of the dict it returns.

Standard library only, and it imports nothing of this tool: the vendor's code runs in this process, never in the
auditor's. What the vendor's code prints goes to stderr (stdout carries the answers only). When the function
raises (or cannot be loaded, or returns something other than a dict) the traceback goes to stderr, whose last
line names the exception, and the process exits with :data:`RAISED`.
"""

import importlib
import importlib.util
import json
import sys
import traceback

#: Exit status when the vendor's function raised or could not be called.
RAISED = 3


def _jsonable(value):
    item = getattr(value, "item", None)  # a numpy scalar
    return item() if callable(item) else str(value)


def main(argv):
    form, where, name = argv
    out = sys.stdout
    sys.stdout = sys.stderr
    items = [json.loads(line) for line in sys.stdin.read().splitlines() if line.strip()]
    try:
        if form == "file":
            spec = importlib.util.spec_from_file_location("vendor_score_module", where)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
        result = getattr(module, name)(items)
        if not isinstance(result, dict):
            raise TypeError(f"{name} returned {type(result).__name__}, not a dict of id -> score")
        text = "".join(json.dumps({"id": str(k), "score": v}, default=_jsonable) + "\n" for k, v in result.items())
    except BaseException:  # noqa: BLE001 - every failure of vendor code is reported, located, by the parent
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
        sys.exit(RAISED)
    out.write(text)
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
