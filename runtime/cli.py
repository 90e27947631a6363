"""The ``audit`` command line: validate, compile (lock), execute.

Exit codes: 0 done; 1 internal error (traceback kept); 2 invalid spec, data file or usage;
3 lock missing or mismatched; 4 the ``--fail-on`` gate tripped.
Heavy libraries (pandas, torch, sentence-transformers) are imported inside the commands that need
them, so ``audit --help`` and ``audit validate`` start fast.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

EXIT_OK, EXIT_INTERNAL, EXIT_INVALID, EXIT_LOCK, EXIT_GATE = 0, 1, 2, 3, 4

app = typer.Typer(
    name="audit",
    help="Correspondence audits of automated hiring systems: validate, compile (lock) and execute a spec.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

SpecArg = Annotated[Path, typer.Argument(help="The audit spec (YAML).", show_default=False, metavar="SPEC")]


class Gate(str, Enum):
    FAIL = "FAIL"
    INVESTIGATE = "INVESTIGATE"


class TierName(str, Enum):
    research = "research"
    operational = "operational"


def _version(value: bool) -> None:
    if value:
        from compiler.lock import tool_version

        print(f"audit-compiler {tool_version()}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Correspondence audits of automated hiring systems: validate, compile (lock) and execute a spec."""


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


@app.command()
def validate(spec: SpecArg) -> None:
    """Check a spec (structure, levels, variants, thresholds, files) without writing anything."""
    from compiler import compile_spec

    compiled = compile_spec(spec)
    _print_warnings(compiled)
    c = compiled.plan["counts"]
    _console().print(f"[green]valid[/]: {spec} ({_n(c['jobs'], 'job')}, {_n(c['variants'], 'variant')}, "
                     f"{_n(c['systems'], 'system')})")


def _print_warnings(compiled) -> None:
    for w in compiled.warnings:
        print(f"warning: {w}", file=sys.stderr)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


@app.command("compile")
def compile_(spec: SpecArg) -> None:
    """Validate, expand into a plan and write the lock (<spec>.lock.json) and plan (<spec>.plan.json)."""
    from rich.table import Table

    from compiler import compile_spec
    from compiler.lock import amend, build_lock, existing_lock, lock_path, plan_path, write_json

    compiled = compile_spec(spec)
    _print_warnings(compiled)
    lock = build_lock(compiled.resolved, compiled.plan, spec_file=spec.name)
    old = existing_lock(spec)
    unchanged = old is not None and old.get("spec_digest") == lock["spec_digest"] \
        and old.get("plan_digest") == lock["plan_digest"]
    if unchanged:
        lock = old  # re-compiling an unchanged spec keeps the pre-registration (and its time)
    else:
        if old is not None and "resolved_spec" in old:
            lock = amend(old, lock)  # a deliberate change: the earlier entries stay in the lock
        write_json(plan_path(spec), compiled.plan)
        write_json(lock_path(spec), lock)
    c = compiled.plan["counts"]
    console = _console()
    table = Table(title=f"audit {compiled.resolved['audit']}: what the run will be", show_header=False)
    rows = [
        ("jobs", c["jobs"]), ("base candidates (K x jobs)", c["base_candidates"]),
        ("variants (reference included)", c["variants"]), ("resumes", c["resumes"]),
        ("systems", c["systems"]), ("texts to embed (at most)", c["texts_to_embed"]),
        ("model calls", c["model_calls"]), ("estimated tokens / cost", _tokens_cost(c)),
        ("plan tasks", c["tasks"]), ("metric rows (metrics x variants x systems x conditions)", c["metric_rows"]),
        ("paired candidates per metric cell", c["paired_candidates_per_variant"]),
    ]
    for k, v in rows:
        table.add_row(k, "from the score file" if v is None else str(v))
    console.print(table)
    if "llm_estimate" in compiled.plan:
        _print_llm_estimate(console, compiled.plan["llm_estimate"])
    console.print(f"spec digest sha256:{lock['spec_digest']['digest']}")
    if unchanged:
        console.print(f"{lock_path(spec)} unchanged: the spec matches its lock of {lock['created_at']}")
    elif lock["amendments"] and lock["amendments"][-1]["amended_at"] == lock["created_at"]:
        console.print(f"[yellow]amendment {len(lock['amendments'])}[/] of the lock; changed keys:")
        for line in lock["amendments"][-1]["changes"]:
            console.print(f"  - {line}", markup=False)
        console.print(f"wrote {lock_path(spec)} and {plan_path(spec)}")
    else:
        console.print(f"wrote {lock_path(spec)} and {plan_path(spec)}")


def _tokens_cost(c: dict) -> str:
    cost = c["estimated_cost_usd"]
    return f"{c['estimated_tokens']} / " + ("unknown (see below)" if cost is None else f"${cost:.4f}")


def _print_llm_estimate(console, est: dict) -> None:
    """Calls, tokens and cost per LLM stage (compiler.llm.estimate); says where the price is unknown."""
    from rich.table import Table

    table = Table(title="LLM calls per stage (output tokens counted at max_tokens: an upper bound)")
    for col in ("stage", "model", "calls", "input tokens", "output tokens", "cost (USD)"):
        table.add_column(col)
    for st in est["stages"]:
        cost = "unknown" if st["cost_usd"] is None else f"{st['cost_usd']:.4f}"
        table.add_row(st["stage"], st["model"], str(st["calls"]), str(st["input_tokens"]),
                      str(st["output_tokens"]), cost)
    console.print(table)
    methods = sorted({st["method"] for st in est["stages"]})
    console.print(f"tokens counted with {', '.join(methods)}", markup=False)
    for model in sorted({st["model"] for st in est["stages"] if st["cost_usd"] is None}):
        console.print(f"cost unknown for {model}: litellm's cost map has no price for it "
                      "(the total above leaves it out)", markup=False)


@app.command()
def execute(
    spec: SpecArg,
    out: Annotated[Optional[Path], typer.Option("--out", help="Output root (default: reports/).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
    fail_on: Annotated[Optional[Gate], typer.Option("--fail-on", help="Exit 4 when any metric has this status (INVESTIGATE includes FAIL).")] = None,
    tier: Annotated[TierName, typer.Option("--tier", help="Threshold tier the gate reads.")] = TierName.research,
) -> None:
    """Run a locked spec: generate, score, rank, analyse, and write the report into reports/<audit>/<run>/."""
    from runtime.execute import execute as run_execute, gate_tripped

    result = run_execute(spec, out=out, quiet=quiet)
    console = _console()
    for pkg, change in result.run.get("version_changes_since_lock", {}).items():
        print(f"warning: {pkg} is {change['now']}, the lock recorded {change['locked']} (see run.json)",
              file=sys.stderr)
    risk = result.risk[(result.risk["system"] == "ALL")].set_index("tier")
    for t in ("research", "operational"):
        row = risk.loc[t]
        console.print(f"{t:<12} risk {row['risk_score']:.3f} ({row['band']}): {int(row['n_fail'])} FAIL, "
                      f"{int(row['n_investigate'])} INVESTIGATE, {int(row['n_pass'])} PASS")
    console.print(f"run folder: {result.run_dir}")
    if fail_on is None and tier is not TierName.research:
        _console(stderr=True).print("note: --tier only selects the tier --fail-on reads; no gate was set")
    hits = gate_tripped(result.metrics, fail_on.value if fail_on else None, tier.value)
    if hits:
        err = _console(stderr=True)
        err.print(f"--fail-on {fail_on.value} ({tier.value} tier) tripped by {len(hits)} row(s):")
        for h in hits[:20]:
            err.print(f"  {h}")
        raise typer.Exit(EXIT_GATE)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``audit`` console script: maps user errors to exit codes without a traceback."""
    from compiler.errors import AuditError, SpecError

    try:
        rv = app(args=argv, prog_name="audit", standalone_mode=False)
    except typer.Abort:
        sys.exit(EXIT_INTERNAL)
    except typer.TyperException as err:  # typer's (vendored click) usage and parameter errors
        show = getattr(err, "show", None)
        if show is None:
            raise
        show()
        sys.exit(EXIT_INVALID if getattr(err, "exit_code", 2) == 2 else err.exit_code)
    except AuditError as err:
        lines = str(err).splitlines()
        if isinstance(err, SpecError):  # one located issue per line
            lines = [f"error: {line}" for line in lines]
        else:  # one message, possibly with detail lines
            lines = [f"error: {lines[0]}"] + [ln if ln.startswith("  ") else f"  {ln}" for ln in lines[1:]]
        print("\n".join(lines), file=sys.stderr)
        sys.exit(err.exit_code)
    sys.exit(rv if isinstance(rv, int) else EXIT_OK)


if __name__ == "__main__":  # pragma: no cover
    main()
