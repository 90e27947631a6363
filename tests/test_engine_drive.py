"""The Ray engine's completion loop (``RayEngine._drive``) against a scripted stand-in for ``ray.wait``/``ray.get``
(our own plumbing: which batch goes back to the queue, what counts as a death, when a slot sends again). Ray's
real exception classes are raised; the real cluster, a real killed actor, runs in ``test_engine_ray.py``."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray", reason="the ray extra (audit-compiler[ray]) is not installed")

from runtime.pipeline import engine as eng  # noqa: E402

RESTARTING = ray.exceptions.ActorUnavailableError("The actor is temporarily unavailable: IOError: The actor is "
                                                  "restarting.", None)


class _Ref:
    def __init__(self, what, outcome):
        self.what, self.outcome = what, outcome


class _ScriptedRay:
    """``script[unit]``: what each send of ``unit`` gives, in order ("dead", "restarting" or a value); ``pings``:
    what each ping gives, in order (an actor restarting answers "restarting")."""

    exceptions = ray.exceptions

    def __init__(self, script, pings=()):
        self.script = {k: list(v) for k, v in script.items()}
        self.pings = list(pings)
        self.sent: list[str] = []

    def submit(self, slot, unit):
        self.sent.append(unit)
        return _Ref(unit, self.script[unit].pop(0))

    def ping(self, slot):
        self.sent.append("ping")
        return _Ref("ping", self.pings.pop(0) if self.pings else 4242)

    def wait(self, refs, num_returns=1, timeout=None):
        return refs[:1], refs[1:]

    def get(self, ref):
        if ref.outcome == "dead":
            raise ray.exceptions.RayActorError()
        if ref.outcome == "restarting":
            raise RESTARTING
        return ref.outcome


def _drive(fake, units, slots=1, retries=3, actor=True):
    engine = eng.RayEngine.__new__(eng.RayEngine)
    engine.ray, engine.retries, engine.retried = fake, retries, []
    out = list(engine._drive(units, slots, fake.submit, lambda u: u, "minilm", ping=fake.ping if actor else None))
    return out, engine.retried


def test_a_killed_actor_is_pinged_until_it_is_back_and_its_batch_counts_one_death(monkeypatch):
    """Stop 57's CI: a batch killed once, then sent again while its actor restarted, failed the run as "died 4
    time(s)". Now the slot pings its actor until it answers, then sends the batch once more."""
    monkeypatch.setattr(eng, "RESTART_BACKOFF_S", 0.001)
    fake = _ScriptedRay({"a": ["restarting", "A"], "b": ["B"]}, pings=["restarting"] * 6)
    out, retried = _drive(fake, ["a", "b"])
    assert out == ["A", "B"] and retried == ["a"]
    assert fake.sent == ["a"] + ["ping"] * 7 + ["a", "b"]
    fake = _ScriptedRay({"a": ["dead", "A"], "b": ["B"], "c": ["C"]})  # 2 slots: the other one carries on
    out, retried = _drive(fake, ["a", "b", "c"], slots=2)
    assert sorted(out) == ["A", "B", "C"] and retried == ["a"]


def test_deaths_past_the_retries_still_fail_the_run(monkeypatch):
    monkeypatch.setattr(eng, "RESTART_BACKOFF_S", 0.001)
    fake = _ScriptedRay({"a": ["dead", "restarting", "dead", "restarting"]}, pings=["restarting"] * 3)
    with pytest.raises(eng.EngineTaskFailed) as err:
        _drive(fake, ["a"])
    assert str(err.value).startswith("score batch a of system 'minilm': its worker died 4 time(s), past the 3 "
                                     "retries (last on node unknown: The actor ")
    assert err.value.exit_code == 7
    assert fake.sent == ["a", "ping", "ping", "ping", "ping", "a", "ping", "a", "ping", "a"]


def test_tasks_are_sent_again_at_once_without_pings():
    fake = _ScriptedRay({"a": ["dead", "dead", "A"]})
    out, retried = _drive(fake, ["a"], actor=False)
    assert out == ["A"] and retried == ["a", "a"] and fake.sent == ["a", "a", "a"]


def test_an_actor_that_never_comes_back_fails_the_run_after_the_restart_wait(monkeypatch):
    monkeypatch.setattr(eng, "RESTART_BACKOFF_S", 0.001)
    monkeypatch.setattr(eng, "RESTART_WAIT_S", 0.05)
    fake = _ScriptedRay({"a": ["dead"]}, pings=["restarting"] * 1000)
    with pytest.raises(eng.EngineTaskFailed) as err:
        _drive(fake, ["a"])
    assert str(err.value).startswith("score batch a of system 'minilm': its worker was restarting and did not come "
                                     "back within 0 s (node unknown: The actor ")
    assert 3 <= fake.sent.count("ping") < 60
