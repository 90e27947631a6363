"""Semantic checks that need several parts of the spec at once.

Each check returns what it finds (:class:`~compiler.errors.Finding`: a key path and a message; the
checks of the plug-ins give :class:`~compiler.errors.Issue` objects), and :func:`validate` locates all
of them in the YAML file at once, so the user sees every problem of a spec at once. The checks are
given the spec's parts (its design and system kinds, :func:`compiler.designs.parts_of`), looked up
once by the caller. Messages are module constants, asserted by golden tests.

The checks of a design live with the design (:mod:`compiler.designs`), those of a system kind with
its hook (:mod:`compiler.systems`), those of an audit family with the family
(:mod:`compiler.families`); this module runs them, checks what every spec shares (ids, job texts,
file references) and refuses an enabled family whose needs the design and systems cannot meet.
"""

from __future__ import annotations

from pathlib import Path

from compiler import onet
from compiler.designs import PROVIDES_WORDS, Parts, parts_of
from compiler.errors import Finding, Issue, SpecError
from compiler.extras import check_extras, extra_findings, extra_issues
from compiler.families import families
from compiler.load import LoadedSpec
from compiler.spec import PLUGIN_BLOCKS
from compiler.registry import Needs
from compiler.paths import (MSG_BAD_PATH, MSG_EMPTY, MSG_FILE_ABSOLUTE, MSG_FILE_ESCAPES, MSG_FILE_MISSING,
                            MSG_NO_WEIGHTS, MSG_NOT_A_FILE, MSG_NOT_A_FOLDER, MSG_NOT_UTF8, WEIGHT_FILES,
                            reference_problem, resolve_inside, weight_files)
from compiler.systems import MissingExtra

__all__ = [
    "validate", "spec_advisories", "family_issues",
    # moved to compiler.extras; re-exported for earlier callers
    "extra_issues", "check_extras",
    # moved to compiler.paths (the leaf module of file references); re-exported for earlier callers
    "MSG_FILE_ABSOLUTE", "MSG_FILE_ESCAPES", "MSG_FILE_MISSING", "MSG_NOT_A_FILE", "MSG_NOT_A_FOLDER",
    "MSG_NO_WEIGHTS", "MSG_NOT_UTF8", "WEIGHT_FILES", "resolve_inside", "weight_files",
]

#: What a check returns: findings (located by :func:`validate`) and the located issues of the plug-ins' checks.
Found = list[Finding | Issue]

MSG_DUP_ID = "duplicate {what} id {id!r} (also at {first})"
MSG_JOB_TEXT = "job {id!r} needs a description or description_file (a system scores its text)"
MSG_JOB_BOTH = "give description or description_file, not both"
MSG_ONET_DESIGN = ("an O*NET occupation is written by the template generator only; set candidates.generator: "
                   "template, or give family and description instead (design {design!r})")
MSG_NEEDS = "family {family!r} needs {needs}; design {design!r} provides {provides}"


MSG_NO_JOBS = "required key 'jobs' is missing"


def _job_issues(ls: LoadedSpec, parts: Parts) -> Found:
    out: Found = []
    if not ls.spec.jobs and parts.design.id != "applicants":  # optional only where applicants are read
        out.append(Finding(("jobs",), MSG_NO_JOBS))
    needs_text = any(parts.needs_text)
    for i, job in enumerate(ls.spec.jobs):
        if job.description is not None and job.description_file is not None:
            out.append(Finding(("jobs", i, "description_file"), MSG_JOB_BOTH))
        if job.onet is not None:  # issue 32: the generator writes an O*NET occupation's posting and résumés
            if parts.design.id not in ("template", "score_file"):
                out.append(Finding(("jobs", i, "onet"), MSG_ONET_DESIGN.format(design=parts.design.id)))
            elif (problem := onet.check_code(job.onet, job.title)) is not None:
                out.append(Finding(("jobs", i, "onet"), problem))
        elif needs_text and job.description is None and job.description_file is None:
            out.append(Finding(("jobs", i), MSG_JOB_TEXT.format(id=job.id)))
    return out


def _ids_issues(ls: LoadedSpec) -> Found:
    out: Found = []
    for what, items in (("job", ls.spec.jobs), ("system", ls.spec.systems)):
        first: dict[str, int] = {}
        key = "jobs" if what == "job" else "systems"
        for i, item in enumerate(items):
            if item.id in first:
                where = f"{key}[{first[item.id]}]"  # as compiler.load.dotted writes the key path
                out.append(Finding((key, i, "id"), MSG_DUP_ID.format(what=what, id=item.id, first=where)))
            first.setdefault(item.id, i)
    return out


MSG_SOURCE_UNUSED = ("source describes a score export, but no system is precomputed (the tool scores the "
                     "résumés itself); remove the block")
MSG_NO_SOURCE = ("no source block: the report cannot say who produced the scores, with which system and version, "
                 "or how the variants were made; add source: {producer, system, version, exported, variants_made, "
                 "contact}")


MSG_PAIRED_ONLY = ("kind {kind!r} scores the résumés of a paired design (template, llm or a score file): the "
                   "{design} design gives profiles without variants; use kind embedding or lexical")


def _system_issues(ls: LoadedSpec, parts: Parts) -> Found:
    out: Found = [issue for i, s in enumerate(ls.spec.systems) for issue in parts.kinds[i].issues(ls, i, s)]
    if "unpaired" in parts.design.provides:
        out += [Finding(("systems", i, "kind"), MSG_PAIRED_ONLY.format(kind=s.kind, design=parts.design.id))
                for i, s in enumerate(ls.spec.systems) if getattr(parts.kinds[i], "paired_only", False)]
    if ls.spec.source is not None and all(parts.needs_text):
        out.append(Finding(("source",), MSG_SOURCE_UNUSED, key=True))
    return out


def _file_issues(ls: LoadedSpec, parts: Parts) -> Found:
    refs: list[tuple[tuple, str, str]] = []
    for i, job in enumerate(ls.spec.jobs):
        if job.description_file is not None:
            refs.append((("jobs", i, "description_file"), job.description_file, "text"))
    for i, system in enumerate(ls.spec.systems):
        refs += parts.kinds[i].files(i, system)
    problems = [(loc, reference_problem(ls.folder, ref, what)) for loc, ref, what in refs]
    return [Finding(loc, err) for loc, err in problems if err]


def _words(items: frozenset[str]) -> str:
    return " and ".join(PROVIDES_WORDS.get(x, x) for x in sorted(items))


def _missing(needs: Needs, provides: frozenset[str]) -> str:
    """What a family lacks, in words: the missing words of its one alternative, or every alternative."""
    if len(needs.alternatives) == 1:
        return _words(needs.alternatives[0] - provides)
    return " or ".join(_words(a) for a in needs.alternatives)


def family_issues(ls: LoadedSpec, parts: Parts | None = None) -> list[Issue]:
    """The checks of each family whose block the spec writes, when the design and systems give it what
    it needs; when they cannot, one refusal located at the block (its own checks are then skipped)."""
    return ls.locate(_family_issues(ls, parts or parts_of(ls)))


def _family_issues(ls: LoadedSpec, parts: Parts) -> Found:
    design, from_systems, provides = parts.design, parts.from_systems, parts.provides
    out: Found = []
    for family in families():
        written = family.block(ls.spec)
        if not written:
            continue
        if family.needs.met(provides):
            out.extend(family.issues(ls))
        else:
            shown = _words(design.provides) + (f" (its systems: {_words(from_systems)})" if from_systems else "")
            out.append(Finding(written[0], MSG_NEEDS.format(family=family.id, needs=_missing(family.needs, provides),
                                                            design=design.id, provides=shown)))
    return out


MSG_OUT_LEAVES = ("output root {path!r} leaves the spec's folder; a spec writes its runs inside its own folder "
                  "(to write elsewhere, the operator passes `audit execute --out DIR`)")
MSG_OUT_ABSOLUTE = ("output root {path!r} is absolute; it is relative to the spec's folder (to write elsewhere, "
                    "the operator passes `audit execute --out DIR`)")


MSG_STORE_LEAVES = ("task store {path!r} leaves the spec's folder; a spec keeps its task store in a folder inside "
                    "its own folder, e.g. .audit-store (to keep it elsewhere, the operator passes `audit execute "
                    "--store DIR`)")
MSG_STORE_ABSOLUTE = ("task store {path!r} is absolute; it is a folder relative to the spec's folder, e.g. "
                      ".audit-store (to keep it elsewhere, the operator passes `audit execute --store DIR`)")
MSG_STORE_FOLDER = ("task store {path!r} is the spec's folder itself; name a folder inside it, e.g. .audit-store "
                    "(the store ignores its whole folder in git)")


def _inside(ls: LoadedSpec, loc: tuple, value: str, *, leaves: str, absolute: str,
            root_msg: str | None = None) -> Found:
    """``value`` (a folder the spec names) resolves inside the spec's folder; ``root_msg`` set: the
    spec's folder itself is refused too."""
    if not str(value).strip():
        return [Finding(loc, MSG_EMPTY)]
    if "\x00" in str(value):
        return [Finding(loc, MSG_BAD_PATH.format(path=value, why="it contains a NUL character"))]
    if Path(value).is_absolute():
        return [Finding(loc, absolute.format(path=value))]
    try:
        root = ls.folder.resolve()
        target = (root / value).resolve()
    except (OSError, RuntimeError, ValueError) as err:
        return [Finding(loc, MSG_BAD_PATH.format(path=value, why=getattr(err, "strerror", None) or str(err)))]
    if target == root and root_msg is not None:
        return [Finding(loc, root_msg.format(path=value))]
    if target != root and root not in target.parents:
        return [Finding(loc, leaves.format(path=value))]
    return []


def _execution_issues(ls: LoadedSpec) -> Found:
    """``execution.out`` and ``execution.store`` stay inside the spec's folder (issues 14 and 41): a
    spec from someone else must not make ``audit execute`` write anywhere else on the machine (a store
    at ``..`` would write a ``.gitignore`` of ``*`` into the folder above, hiding a repository's files);
    the store is never the spec's folder itself. ``--out`` and ``--store`` are the operator's choice."""
    ex = ls.spec.execution
    out: Found = []
    if ex.out is not None:
        out += _inside(ls, ("execution", "out"), ex.out, leaves=MSG_OUT_LEAVES, absolute=MSG_OUT_ABSOLUTE)
    if ex.store is not None:
        out += _inside(ls, ("execution", "store"), ex.store, leaves=MSG_STORE_LEAVES, absolute=MSG_STORE_ABSOLUTE,
                       root_msg=MSG_STORE_FOLDER)
    if ex.llm_cache is not None:  # deprecated, read once: a file reference as any other (DESIGN.md, Spec rules)
        out += _inside(ls, ("execution", "llm_cache"), ex.llm_cache, leaves=MSG_FILE_ESCAPES.replace(" {folder}", ""),
                       absolute=MSG_FILE_ABSOLUTE, root_msg=MSG_NOT_A_FILE)
    if ex.systems:  # issue 35 §2: how a remote system is called
        from compiler.systems import kinds_of

        kinds = dict(zip([s.id for s in ls.spec.systems], kinds_of(ls.spec.systems)))
        remote = [sid for sid, k in kinds.items() if getattr(k, "remote", False)]
        for sid, setting in ex.systems.items():
            if sid not in remote:
                out.append(Finding(("execution", "systems", sid), MSG_EXEC_SYSTEM.format(
                    id=sid, allowed=", ".join(remote) or "none (no system of the spec is remote, e.g. kind: http)"),
                    key=True))
            elif getattr(kinds[sid], "runs_code", False):  # a vendor's program: no requests to pace or retry
                out += [Finding(("execution", "systems", sid, key), MSG_EXEC_PROGRAM_KEY.format(
                    key=key, what=what, id=sid, kind=kinds[sid].id), key=True)
                    for key, what in HTTP_ONLY_KEYS.items() if getattr(setting, key, None) is not None]
    return out


#: ``execution.systems.<id>`` keys that pace or retry HTTP requests: a program (command, python) has neither.
HTTP_ONLY_KEYS = {"requests_per_s": "paces HTTP requests", "retries": "repeats failed HTTP requests"}
MSG_EXEC_PROGRAM_KEY = ("{key} {what} and applies to kind: http only; system {id!r} "
                        "({kind}) runs a program, which a failure stops (its answers so far are kept); allowed "
                        "here: concurrency, timeout_s")


#: ``execution.systems`` names a system that is not a remote system of the spec (issue 35 §2).
MSG_EXEC_SYSTEM = "execution.systems names {id!r}, which is not a remote system of the spec; allowed: {allowed}"


#: The message of an unknown ``systems[].kind`` (the spec model's own, pydantic's, for a kind it lacks).
MSG_UNKNOWN_KIND = "Input tag {kind!r} found using 'kind' does not match any of the expected tags: {kinds}"
MSG_UNDECLARED_BLOCK = ("analysis.{key} belongs to no audit family (its plug-in's declaration did not load: see "
                        "the warning above); allowed families: {families}")


def undeclared_issues(ls: LoadedSpec) -> list[Issue]:
    """A system kind or an ``analysis`` block whose spec model an installed plug-in gives but whose
    declaration failed to import (a warning named it): refused as unknown, located (issue 28)."""
    return ls.locate(_undeclared_issues(ls))


def _undeclared_issues(ls: LoadedSpec) -> Found:
    from compiler.systems import SYSTEMS

    kinds = list(SYSTEMS)
    out: Found = [Finding(("systems", i), MSG_UNKNOWN_KIND.format(kind=s.kind, kinds=", ".join(map(repr, kinds))))
                  for i, s in enumerate(ls.spec.systems) if s.kind not in SYSTEMS]
    keys = {f.key for f in families() if f.key}
    for key in ls.spec.analysis.model_fields_set:
        if key in PLUGIN_BLOCKS and key not in keys and getattr(ls.spec.analysis, key) is not None:
            out.append(Finding(("analysis", key), MSG_UNDECLARED_BLOCK.format(
                key=key, families=", ".join(f.id for f in families()))))
    return out


def validate(ls: LoadedSpec, parts: Parts) -> None:
    """Run every semantic check; raise one :class:`SpecError` listing all problems found, located at once.

    ``parts``: the spec's design and system kinds (:func:`compiler.designs.parts_of`, looked up once by
    the caller: :func:`compiler.compile_spec`); a kind without a declaration is refused before any
    check reads them.

    Raises
    ------
    SpecError
        With one located issue per problem (job texts, the design's block, ids, systems, file
        references, each enabled family's block or its unmet needs).
    compiler.systems.MissingExtra
        The same, when one of them is a part whose extra is not installed
        (:func:`compiler.extras.extra_issues`).
    """
    undeclared = _undeclared_issues(ls)
    # a plug-in whose spec model loaded but whose declaration did not: nothing else can run
    found, extras = (undeclared, []) if undeclared else _issues(ls, parts)
    issues = ls.locate(found)
    if extras:
        raise MissingExtra(issues)
    if issues:
        raise SpecError(issues)


def _issues(ls: LoadedSpec, parts: Parts) -> tuple[Found, Found]:
    """Every check's findings, in the order the user reads them (then sorted by position), and those of
    the extras not installed among them. A check that reads only the spec returns findings
    (:class:`~compiler.errors.Finding`) and joins ``found`` or ``later``; the checks that read files or
    the environment run after those."""
    design = parts.design.issues(ls)
    # the families' checks read the design (axes, levels, variants): when it is broken they would
    # only repeat its errors in other words, so its root errors are reported alone (issue 14)
    found = _job_issues(ls, parts) + design + _ids_issues(ls) + _system_issues(ls, parts)
    later = _execution_issues(ls) + ([] if design else _family_issues(ls, parts))
    # what reads the files and the environment last: the files named, the extras installed, the data files
    files = _file_issues(ls, parts)
    extras: Found = extra_findings(ls, parts, "resolve")
    # the data files' checks read the design too (jobs, variants), and need the files themselves
    no_jobs = not ls.spec.jobs and parts.design.id != "applicants"  # the root error alone, not its echoes
    data = [] if design or files or no_jobs else [issue for i, s in enumerate(ls.spec.systems)
                                       for issue in parts.kinds[i].data_issues(ls, i, s)]
    return found + extras + files + data + later, extras


MSG_BATCH_SIZE_IGNORED = ("has no effect since methods version 2: the plan fixes every score batch (an "
                          "embedding's bytes depend on the texts encoded with it); remove the key")
MSG_PLANTED_SHIFT_SE_IGNORED = ("is ignored (issue 39 §6): the self-test plants the SESOI's score shift δ* (sesoi.csv) "
                                "in one category at a time, so the planted paired t comes from the data; a shift in "
                                "standard errors fixed it; remove the key")
MSG_LLM_CACHE_MOVED = ("LLM answers are now kept in the task store (execution.store); an SQLite cache of an "
                       "earlier release at this path is imported into it once; remove the key afterwards")


#: Fewer base candidates per job than this: intervals and tests of the rank and set metrics are not
#: informative (seed 000 §5: a minimum-n warning before a report is generated; at n = 40 and K = 10 a
#: quarter of the pool is the shortlist).
MIN_BASE_PER_JOB = 40
MSG_FEW_BASE = ("{n} base candidates per job is under {min}: the rank and shortlist metrics degenerate at small "
                "pools (every candidate near the top-K, few rank crossings possible) and their intervals and tests "
                "say little (seed 000 §5); give base_per_job >= {min}")


def spec_advisories(ls: LoadedSpec, parts: Parts) -> list[Issue]:
    """Legal but probably unintended designs and deprecated keys (printed as warnings; they do not stop a
    run), located at once. ``parts``: as :func:`validate`'s."""
    out: Found = list(parts.design.advisories(ls))
    n_base = getattr(ls.spec.candidates, "base_per_job", None)
    if isinstance(n_base, int) and n_base < MIN_BASE_PER_JOB:
        out.append(Finding(("candidates", "base_per_job"), MSG_FEW_BASE.format(n=n_base, min=MIN_BASE_PER_JOB)))
    if ls.spec.source is None and ls.spec.candidates is None and ls.spec.systems and not any(parts.needs_text) \
            and parts.design.id != "applicants":
        out.append(Finding(("systems",), MSG_NO_SOURCE, key=True))
    for i, s in enumerate(ls.spec.systems):
        out += parts.kinds[i].advisories(ls, i, s)
    from compiler.families.metric_suite import threshold_advisories

    out += threshold_advisories(ls)
    ex = ls.raw.get("execution") if isinstance(ls.raw, dict) else None
    if isinstance(ex, dict) and "batch_size" in ex:
        out.append(Finding(("execution", "batch_size"), MSG_BATCH_SIZE_IGNORED))
    if isinstance(ex, dict) and "llm_cache" in ex:
        out.append(Finding(("execution", "llm_cache"), MSG_LLM_CACHE_MOVED))
    an = ls.raw.get("analysis") if isinstance(ls.raw, dict) else None
    es = an.get("effect_size") if isinstance(an, dict) else None
    if isinstance(es, dict) and "planted_shift_se" in es:
        out.append(Finding(("analysis", "effect_size", "planted_shift_se"), MSG_PLANTED_SHIFT_SE_IGNORED))
    return ls.locate(out)
