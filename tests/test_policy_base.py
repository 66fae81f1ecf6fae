"""What the policy base classes give every policy: the one answer builder, inherited constructor
arguments and the shared argument checks (mf_sched._validate)."""

from __future__ import annotations

import inspect
import typing
import warnings
from typing import Any

import numpy as np
import pytest

from mf_sched import FidelityLadder, Instance, get_policy, list_policies, policy_for, run_policy
from mf_sched._validate import check_choice, check_delta, check_int, check_numbers, check_real
from mf_sched.noise import SubGaussian
from mf_sched.policy import NotStoppingWarning, RoundPolicy
from mf_sched.registry import build_policy

LADDER = FidelityLadder([1.0, 4.0], [0.2, 0.0])


# ---------------------------------------------------------------------------------------------- _answer
def _answering(base: str, **answer: Any) -> Any:
    """A registered policy class whose recommendation is ``_answer(**answer)``."""

    class Answering(get_policy(base)):  # type: ignore[misc,valid-type]
        def _recommend(self) -> Any:
            return self._answer(**answer)

    return Answering


def test_answer_fills_cost_pulls_and_delta():
    p = _answering("se", arm=np.int64(1), certified=True, details={"rounds": 1})(n_arms=2, ladder=LADDER, delta=0.1)
    p.tell(p.ask(), 0.5)
    rec = p.recommendation()
    assert (rec.arm, type(rec.arm), rec.certified, rec.reason) == (1, int, True, "identified")
    assert (rec.cost, rec.n_pulls, rec.delta, dict(rec.details)) == (4.0, 1, 0.1, {"rounds": 1})
    rec = _answering("se", arm=None)(n_arms=2, ladder=LADDER).recommendation()
    assert (rec.arm, rec.certified, rec.reason, dict(rec.details)) == (None, False, "in-progress", {})
    assert rec.mixture is None
    assert _answering("se", arm=0, reason="exhausted")(n_arms=2, ladder=LADDER).recommendation().reason == "exhausted"


def test_answer_has_no_delta_for_policies_without_one():
    assert _answering("sh", arm=0, certified=True)(n_arms=2, ladder=LADDER).recommendation().delta is None
    # uniform without delta (no stopping rule) has delta None
    assert _answering("uniform", arm=0)(n_arms=2, ladder=LADDER, rounds=2).recommendation().delta is None


# ---------------------------------------------------------------------------------------------- constructors
@pytest.mark.parametrize("name", sorted(list_policies()))
def test_every_policy_signature_lists_the_base_arguments(name):
    """Constructors that forward ``**kwargs`` still show noise, budget and seed (build_policy reads them)."""
    cls = get_policy(name)
    params = inspect.signature(cls.__init__).parameters
    assert {"noise", "budget", "seed"} <= set(params)
    assert not any(p.kind is p.VAR_KEYWORD for p in params.values())
    hints = typing.get_type_hints(cls.__init__)
    assert "budget" in hints and "seed" in hints


def test_build_policy_passes_problem_arguments_through_forwarded_kwargs():
    problem = {"n_arms": 3, "ladder": LADDER, "delta": 0.05, "budget": 50.0, "seed": 4, "noise": SubGaussian(0.5)}
    p = build_policy("hyperband", problem, eta=2, iterations=2)  # Hyperband -> SuccessiveHalving -> RoundPolicy
    assert (p.budget, p.seed, p.sigma, p.eta, p.iterations) == (50.0, 4, 0.5, 2.0, 2)
    with pytest.raises(ValueError, match="does not accept parameter"):
        build_policy("hyperband", problem, rounds=3)


def test_forwarding_constructor_shows_inherited_keywords_in_order():
    class Demo(RoundPolicy):
        def __init__(self, n_arms: int, ladder: FidelityLadder, *, width: int = 1, **kwargs: Any) -> None:
            super().__init__(n_arms, ladder, **kwargs)
            self.width = width

        def _next_round(self) -> None:
            return None

        def _observe_round(self, arms: Any, fidelities: Any, values: Any) -> None:
            pass

    class Child(Demo):
        def __init__(self, n_arms: int, ladder: FidelityLadder, *, depth: int = 2, **kwargs: Any) -> None:
            super().__init__(n_arms, ladder, **kwargs)

    assert list(inspect.signature(Child.__init__).parameters) == [
        "self",
        "n_arms",
        "ladder",
        "depth",
        "width",
        "noise",
        "budget",
        "seed",
    ]
    assert typing.get_type_hints(Child.__init__)["width"] is int
    assert Child(2, LADDER, width=3, seed=1).width == 3
    with pytest.raises(TypeError):
        Child(2, LADDER, height=1)


# ---------------------------------------------------------------------------------------------- _validate
def test_check_int():
    assert check_int("n", np.int64(3), 1) == 3 and type(check_int("n", 3, 1)) is int
    assert check_int("n", None, 1, none_ok=True) is None
    with pytest.raises(ValueError, match=r"n = 0 is out of range; accepted: an integer in 1\.\.5"):
        check_int("n", 0, 1, 5)
    with pytest.raises(ValueError, match="n must be an integer, got True"):
        check_int("n", True, 0)
    with pytest.raises(ValueError, match="n must be an integer, got 1.5"):
        check_int("n", 1.5, 0)
    with pytest.raises(ValueError, match="n must be an integer, got None"):
        check_int("n", None, 0)


def test_check_real():
    assert check_real("eta", 3, gt=1.0) == 3.0 and check_real("x", np.float32(0.5), ge=0.0) == 0.5
    assert check_real("x", None, none_ok=True) is None
    for bad in (True, "2", None, [1.0]):
        with pytest.raises(ValueError, match="x must be a number"):
            check_real("x", bad, gt=0.0)
    for bad in (0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="x = .* is out of range; accepted: a finite number > 0"):
            check_real("x", bad, gt=0.0)
    with pytest.raises(ValueError, match="accepted: >= 4KM"):
        check_real("L", 1.0, ge=16.0, accepted=">= 4KM")


def test_check_choice_delta_numbers():
    assert check_choice("mode", "a", ("a", "b")) == "a"
    with pytest.raises(ValueError, match="mode = 'c' is unknown; accepted: 'a', 'b'"):
        check_choice("mode", "c", ("a", "b"))
    with pytest.raises(ValueError, match="mode = \\['a'\\] is unknown"):
        check_choice("mode", ["a"], ("a", "b"))
    assert check_delta(0.05) == 0.05
    for bad in (0, 1, 1.5):
        with pytest.raises(ValueError, match="accepted: 0 < delta < 1"):
            check_delta(bad)
    assert check_numbers("v", (1, np.float64(2.5))) == [1.0, 2.5]
    with pytest.raises(ValueError, match="v must be a sequence of numbers"):
        check_numbers("v", "12")
    with pytest.raises(ValueError, match=r"v\[1\] must be a number, got 'x'"):
        check_numbers("v", [1, "x"])


# ---------------------------------------------------------------------------------------------- a run that never stops
def _readme_loop(policy: Any, means: list[float], max_pulls: int) -> None:
    """The README's quickstart loop (``while not policy.done``), with Gaussian noise around ``means``."""
    rng = np.random.default_rng(0)
    while not policy.done and policy.n_pulls < max_pulls:
        pull = policy.ask()
        policy.tell(pull, float(np.clip(means[pull.arm] + rng.normal(0.0, 0.1), 0.0, 1.0)))


@pytest.mark.parametrize("name", ["se", "iise"])
def test_tied_best_arms_warn_that_the_readme_loop_would_never_stop(name):
    """Issue 24 (4): the README's loop with means [0.7, 0.7, 0.5, 0.4] ran 1.9 million pulls with no word. Now the
    policy warns once, after max(100,000, 1,000·K·M) pulls, naming the tie and the arguments that make it stop."""
    ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.20, 0.05, 0.0], resources=[1, 3, 9])
    policy = get_policy(name)(n_arms=4, ladder=ladder, delta=0.05, seed=0)
    assert policy.stall_warning_pulls == 100_000
    with pytest.warns(NotStoppingWarning, match=r"100,000 pulls without stopping.*tie.*budget=Λ") as caught:
        _readme_loop(policy, [0.7, 0.7, 0.5, 0.4], max_pulls=100_005)
    assert not policy.done and len(caught) == 1
    assert ("epsilon=ε (it then stops" in str(caught[0].message)) == (name == "iise")  # se has no ε
    assert caught[0].filename == __file__  # it points at the user's loop
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotStoppingWarning)
        _readme_loop(policy, [0.7, 0.7, 0.5, 0.4], max_pulls=101_000)  # once only


def test_no_warning_where_the_policy_stops_or_is_capped():
    ladder = FidelityLadder([1.0])
    tied = [0.7, 0.7, 0.5]
    quiet = [
        get_policy("iise")(n_arms=3, ladder=ladder, delta=0.05, epsilon=0.3, seed=0),  # stops with ε
        get_policy("se")(n_arms=3, ladder=ladder, delta=0.05, budget=3_000, seed=0),  # a cost cap
        get_policy("uniform")(n_arms=3, ladder=ladder, delta=0.05, rounds=2_000, seed=0),  # its own schedule
        get_policy("se")(n_arms=3, ladder=ladder, delta=0.05, seed=0),  # silenced below
    ]
    quiet[-1].stall_warning_pulls = None
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotStoppingWarning)
        for p in quiet:
            if p.stall_warning_pulls is not None:
                p.stall_warning_pulls = 500
            _readme_loop(p, tied, max_pulls=8_000)
        assert quiet[0].done and quiet[1].done and quiet[2].done and not quiet[3].done
        inst = Instance([[0.7], [0.7], [0.5]], ladder, {"kind": "gaussian", "sigma": 0.1})
        p = policy_for("se", inst, delta=0.05, seed=0)
        p.stall_warning_pulls = 100
        run_policy(p, inst, seed=0, max_pulls=5_000)  # the simulator caps the run itself
    with warnings.catch_warnings(), pytest.raises(NotStoppingWarning, match=r"arms \[0, 1\] tie for the best"):
        warnings.simplefilter("error", NotStoppingWarning)  # uncapped, it would run for ever: said before it starts
        run_policy(policy_for("se", inst, delta=0.05, seed=0), inst, seed=0)
    assert get_policy("ucb1")(n_arms=3, ladder=ladder).stall_warning_pulls is None  # regret: no stopping rule
    with pytest.raises(ValueError, match="stall_warning_pulls"):
        quiet[0].stall_warning_pulls = 0
