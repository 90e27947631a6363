"""The one plug-in registry (issue 28 §1-2): an id declared twice, an ``after`` that cannot hold, a
runtime half without its declaration and an installed plug-in that fails to import are each refused
or skipped with a message naming them; any-of needs; the combined verdict; a family's documents."""

from __future__ import annotations

import pandas as pd
import pytest

from compiler.families import FAMILIES, Family, in_run_order
from compiler.registry import Needs, PluginError, PluginWarning, Registry, plugin_modules


class _A(Family):
    id = "a_family"
    order = 10


class _B(Family):
    id = "b_family"
    order = 20
    after = ("a_family",)


def test_an_id_declared_twice_names_both():
    reg = Registry("audit family", "compiler.families")
    reg.declare(_A)

    class Again(Family):
        id = "a_family"

    with pytest.raises(PluginError) as err:
        reg.declare(Again)
    msg = str(err.value)
    assert "audit family 'a_family' is registered twice" in msg
    assert "test_registry._A" in msg and "Again" in msg
    assert err.value.exit_code == 1


def test_a_declaration_without_id_is_refused():
    class NoId(Family):
        pass

    with pytest.raises(PluginError, match="declares no id"):
        Registry("audit family", "compiler.families").declare(NoId)


def test_after_must_name_an_earlier_family():
    assert list(in_run_order([_B(), _A()])) == ["a_family", "b_family"]

    class Early(Family):
        id = "early"
        order = 5
        after = ("a_family",)

    with pytest.raises(PluginError, match="reads the results of 'a_family', which runs after it"):
        in_run_order([_A(), Early()])

    class Unknown(Family):
        id = "unknown_after"
        after = ("nope",)

    with pytest.raises(PluginError, match="runs after 'nope', which is not a registered audit family"):
        in_run_order([_A(), Unknown()])


def test_the_shipped_families_run_after_what_they_read():
    ids = list(FAMILIES)
    for fid, fam in FAMILIES.items():
        assert all(ids.index(o) < ids.index(fid) for o in fam.after), fid


def test_a_runtime_half_binds_only_to_a_declaration():
    from compiler.families.base import registry

    halves = Registry("audit family half", "runtime.families", side="runtime")
    bind = halves.binder(registry())

    class Orphan:
        pass

    with pytest.raises(PluginError, match="binds to audit family 'no_such_family', which no compiler declaration"):
        bind("no_such_family")(Orphan)
    bound = bind("effects")(type("EffectsHalf", (), {}))
    assert bound.id == "effects" and bound.declaration is FAMILIES["effects"]


def test_a_declaration_without_its_runtime_half_is_an_error():
    declared = Registry("audit family", "compiler.families")
    declared._loaded = True  # nothing to import: only what this test declares
    declared.declare(_A)
    halves = Registry("audit family half", "runtime.families", side="runtime")
    halves._loaded = True
    with pytest.raises(PluginError, match=r"audit family 'a_family' \(.*_A\) declared in the compiler but with no "
                                          r"runtime half"):
        halves.check_halves(declared)


def test_an_installed_plugin_that_fails_to_import_is_skipped_with_a_warning(tmp_path, monkeypatch):
    pkg = tmp_path / "broken_plugin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "compiler.py").write_text("raise RuntimeError('boom at import')\n")
    dist = tmp_path / "broken_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[audit_compiler.plugins]\nbroken = broken_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import compiler.registry as registry_module

    monkeypatch.setattr(registry_module, "_imported", {})
    with pytest.warns(PluginWarning, match=r"plug-in 'broken' \(broken_plugin.compiler\) failed to import and is "
                                           r"skipped: RuntimeError: boom at import"):
        assert plugin_modules("compiler") == []
    assert plugin_modules("blocks") == []  # no blocks module: nothing, silently


def test_any_of_needs():
    either = Needs.of("paired") | Needs.of("unpaired")
    assert either.met({"unpaired"}) and either.met({"paired", "tool_text"}) and not either.met({"answers"})
    assert Needs.of("paired", "answers").met({"paired", "answers"})
    assert not Needs.of("paired", "answers").met({"paired"})
    assert either.describe() == "paired or unpaired"
    assert Needs.of().met(set())


def test_the_combined_verdict():
    from runtime.families.base import FamilyResult, combined_verdict

    valid = FamilyResult(verdict="VALID")
    bad = FamilyResult(verdict="INCONCLUSIVE", failed=["check x failed"])
    none = FamilyResult()
    assert combined_verdict({"m": none}) is None
    assert combined_verdict({"effects": bad}) == ("INCONCLUSIVE", ["check x failed"])  # one family: its own lines
    assert combined_verdict({"effects": valid, "plug": bad}) == ("INCONCLUSIVE", ["plug: check x failed"])
    both = FamilyResult(verdict="INCONCLUSIVE", failed=["positive control"])
    assert combined_verdict({"effects": both, "plug": bad}) == (
        "INCONCLUSIVE", ["effects: positive control", "plug: check x failed"])
    assert combined_verdict({"effects": valid, "plug": FamilyResult(verdict="VALID")}) == ("VALID", [])


@pytest.mark.parametrize("name", ["../escape.txt", "a/b.txt", ".hidden", "", "run.json", "metrics.csv",
                                  "report.pdf", "x" * 200])
def test_a_document_name_that_leaves_the_folder_or_is_taken_is_an_internal_error(tmp_path, name):
    from types import SimpleNamespace

    from runtime.run.folder import RunFolder
    from runtime.pipeline.run import write_documents

    run = {"artifacts": ["metrics.csv"]}
    ctx = SimpleNamespace(run=run, folder=RunFolder(tmp_path, run, None), tables={"metrics": pd.DataFrame()})
    with pytest.raises(RuntimeError, match="audit family 'plug' returned a document named"):
        write_documents(ctx, "plug", {name: b"x"})
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    write_documents(ctx, "plug", {"overlap.md": b"# words\n"})
    assert (tmp_path / "overlap.md").read_bytes() == b"# words\n" and run["artifacts"][-1] == "overlap.md"
