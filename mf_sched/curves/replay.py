"""Replay benchmarks: real learning curves as a multi-fidelity bandit instance, evaluated without training.

A :class:`ReplayBenchmark` is an :class:`~mf_sched.sim.instance.Instance` whose arms are configurations of
a learning-curve source and whose fidelities are a ladder of rungs (epochs, steps, fractions of the run):

* `means[k, m]` is configuration `k`'s score at rung `m` (higher is better: `−loss` for losses)
  averaged over its seeds; the last column is the full-fidelity value, so the best arm, simple regret and
  identification correctness are known;
* the ladder's ζ, γ and λ come from a :class:`~mf_sched.curves.calibration.Calibration`, by default estimated on
  the source's *other* configurations (those not drawn as arms), so :attr:`ReplayBenchmark.zeta_coverage`
  — the fraction of arms whose bias is within ζ̂ — is an honest held-out check of the estimate;
* **seed-noise model** (how an evaluation is drawn): a pull of arm `k` at rung `m` picks one of the
  configuration's complete seeds uniformly at random (with replacement) and returns that run's score at
  the rung, plus `N(0, extra_noise(m)²)`. Sources with several seeds (DeepOBS at the best learning
  rates, AlgoPerf studies) thus replay their real seed-to-seed spread; sources with one seed (the LCBench
  surrogate, TaskSet) are deterministic unless `extra_noise` is given — the benchmarks set it to the σ̂
  measured on DeepOBS / AlgoPerf seeds and say so;
* the policies assume sub-Gaussian noise with `sigma`: by default the largest per-rung seed spread
  `√(σ̂(m)² + extra_noise(m)²)` (one σ must cover every fidelity).

Both observation semantics of :func:`mf_sched.sim.simulate.run_policy` are replayed (:meth:`ReplayBenchmark.sampler`
receives the simulator's `semantics`):

* `"independent"` — every pull is a fresh run: a new seed, cost `λ(m)`;
* `"resumable"` — an arm's replicas are training runs: a pull at `m` continues the most advanced
  replica of that arm still below `m` (the same run, hence the same seed: its value at `m` is
  correlated with what it showed before, as in real training) and costs `λ(m) − λ(m')`, or starts a new
  replica with a fresh seed; this is exactly the rule of :class:`mf_sched.sim.simulate.ResumableMeter`, which
  meters the cost.

For the integrations (an Optuna objective or a Ray trainable that reads the benchmark instead of
training): :meth:`ReplayBenchmark.evaluate` is one independent pull and :meth:`ReplayBenchmark.start_run`
returns a :class:`ReplayRun` advanced rung by rung. :meth:`ReplayBenchmark.to_dict` / `save` write
the plain instance JSON (means, ladder, Gaussian noise with `sigma`) that `mf-sched simulate` reads:
a Gaussian approximation that keeps the real means and ladder but not the seed replay.

Example:
    >>> from mf_sched.curves.learning_curves import LearningCurves
    >>> from mf_sched.sim.simulate import policy_for, run_policy
    >>> rng = np.random.default_rng(0)
    >>> C, ep = 60, np.array([1, 3, 9, 27])
    >>> final = rng.uniform(0.5, 0.9, C)
    >>> runs = [(c, s, e, final[c] - 0.2 / e + 0.01 * rng.standard_normal())
    ...         for c in range(C) for s in range(3) for e in ep]
    >>> curves = LearningCurves.from_records(
    ...     [dict(config=c, seed=s, epoch=e, acc=a) for c, s, e, a in runs],
    ...     metric="acc", mode="max", seed="seed", fidelity="epoch")
    >>> bench = ReplayBenchmark.from_curves(curves, [1, 3, 9, 27], n_arms=20, seed=1)
    >>> bench.K, bench.M, bench.ladder.resources
    (20, 4, (1.0, 3.0, 9.0, 27.0))
    >>> res = run_policy(policy_for("sh", bench, seed=0), bench, semantics="resumable", seed=0)
    >>> res.resumable_cost < res.cost      # survivors continue their runs
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mf_sched._validate import check_int
from mf_sched.curves.calibration import Calibration, calibrate, estimate_sigma
from mf_sched.curves.learning_curves import LearningCurves, parse_fidelities
from mf_sched.ladder import FidelityLadder
from mf_sched.sim.instance import Instance

__all__ = ["ReplayBenchmark", "ReplayRun", "Evaluation"]


@dataclass(frozen=True)
class Evaluation:
    """One replayed evaluation.

    Attributes:
        score: the replayed value, higher is better: what policies are told.
        metric: the same value in the source's own orientation (e.g. a loss: `−score`).
        cost: the cost the evaluation took: `λ(m)` for a fresh run, `λ(m) − λ(level)` for a continued one.
        seed: the replayed seed, an index into the configuration's seeds.
    """

    score: float
    metric: float
    cost: float
    seed: int


class ReplayBenchmark(Instance):
    """Real learning curves as an instance (see the module docstring).

    Args:
        values: `(K, S, M)` scores (higher is better) of every arm's seeds at every rung; NaN marks a
            seed without that rung. Only seeds with all `M` rungs are replayed; every arm needs one.
        ladder: costs, ζ (and optionally γ, resources) of the rungs.
        sigma: the sub-Gaussian scale policies assume (> 0).
        extra_noise: Gaussian noise added to every observation: a number or one per rung (≥ 0).
        mode: the source's direction (`"min"`: `metric = −score`).
        metric_name: display name of the metric.
        labels: descriptive; `labels[k]` is arm `k`'s configuration.
        source: where the curves came from (free text).
        name: display name of the benchmark.
        calibration: the :class:`~mf_sched.curves.calibration.Calibration` the ladder came from, if any.
    """

    def __init__(
        self,
        values: Any,
        ladder: FidelityLadder,
        *,
        sigma: float,
        extra_noise: float | Sequence[float] = 0.0,
        mode: str = "max",
        metric_name: str = "metric",
        labels: Sequence[Any] | None = None,
        calibration: Calibration | None = None,
        source: str | None = None,
        name: str | None = None,
    ) -> None:
        v = np.array(values, dtype=float)
        if v.ndim != 3 or 0 in v.shape:
            raise ValueError(f"values must be a non-empty K×S×M array (arms, seeds, rungs), got shape {v.shape}")
        complete = np.all(np.isfinite(v), axis=2)
        n_valid = complete.sum(axis=1)
        if np.any(n_valid == 0):
            k = int(np.flatnonzero(n_valid == 0)[0])
            raise ValueError(f"arm {k} has no seed with a finite value at every rung; drop it")
        K, S, M = v.shape
        with np.errstate(invalid="ignore"):
            means = np.where(complete[:, :, None], v, 0.0).sum(axis=1) / n_valid[:, None]
        extra = np.broadcast_to(np.asarray(extra_noise, dtype=float), (M,)).copy()
        if not np.all(np.isfinite(extra) & (extra >= 0)):
            raise ValueError(f"extra_noise = {extra_noise!r} is out of range; accepted: finite numbers >= 0")
        super().__init__(means, ladder, {"kind": "gaussian", "sigma": sigma}, source=source, name=name)
        order = np.argsort(~complete, axis=1, kind="stable")  # complete seeds first
        self.values = np.where(complete[:, :, None], v, np.nan)
        self.values.setflags(write=False)
        self.n_seeds = n_valid
        self._seed_index = order
        self.extra_noise = extra
        self.mode = mode
        self.metric_name = metric_name
        self.labels = tuple(labels) if labels is not None else tuple(range(K))
        if len(self.labels) != K:
            raise ValueError(f"labels has {len(self.labels)} entries for {K} arms")
        self.calibration = calibration

    # ------------------------------------------------------------------ construction from curves
    @classmethod
    def from_curves(
        cls,
        curves: LearningCurves,
        rungs: Sequence[float] | str,
        *,
        n_arms: int | None = None,
        calibration: str | Calibration | FidelityLadder = "holdout",
        quantile: float = 0.95,
        confidence: float = 0.95,
        cost: str = "auto",
        how: str = "previous",
        tolerance: float = 0.0,
        sigma: float | str = "max",
        extra_noise: float | Sequence[float] = 0.0,
        seed: int | None = 0,
        name: str | None = None,
    ) -> ReplayBenchmark:
        """Build a benchmark from a learning-curve table.

        Args:
            curves: the learning-curve table.
            rungs: the rungs, strictly increasing fidelities of the table (e.g. `[1, 3, 9, 27]` epochs or
                `"1,3,9,27"`); the last is the full fidelity.
            n_arms: draw this many configurations (uniformly, without replacement, among those with a
                complete seed), `2 ..` that number; default all of them.
            calibration: `"holdout"` (default): estimate the ladder on the configurations not drawn as
                arms (falls back to all, in-sample, when fewer than 20 are left); `"all"`: on every
                configuration; or a ready :class:`~mf_sched.curves.calibration.Calibration` /
                :class:`~mf_sched.ladder.FidelityLadder` with these rungs.
            quantile: the fraction of configurations ζ̂ should cover, in `(0, 1)`; passed to
                :func:`~mf_sched.curves.calibration.calibrate` (not read with a ready calibration or ladder).
            confidence: the level of the upper bound on that quantile, in `(0.5, 1)`; passed to
                :func:`~mf_sched.curves.calibration.calibrate`.
            cost: how the rungs' costs λ are estimated, `"resource"`, `"time"` or `"auto"`; passed to
                :func:`~mf_sched.curves.calibration.calibrate`.
            how: how a run's value at a rung is read: `"previous"`, `"interpolate"` or `"exact"` (see
                :meth:`~mf_sched.curves.learning_curves.LearningCurves.values_at`).
            tolerance: relative slack for reaching a rung, `0 ≤ tolerance < 1` (see
                :meth:`~mf_sched.curves.learning_curves.LearningCurves.values_at`).
            sigma: what policies assume: a number > 0, `"max"` (the largest per-rung
                `√(σ̂² + extra_noise²)`) or `"top"` (the same at the last rung only; not covering the
                noisier early rungs).
            extra_noise: Gaussian noise added to every observation (number or one per rung, `≥ 0`).
            seed: for drawing the arms (`None`: fresh entropy).
            name: the benchmark's display name; `None`: `replay-<metric>-<K>x<M>`.
        """
        r = parse_fidelities(rungs, "rungs")
        rv = curves.values_at(r, how=how, tolerance=tolerance)
        complete = np.all(np.isfinite(rv.score), axis=2)
        valid = np.flatnonzero(complete.any(axis=1))
        if valid.size < 2:
            raise ValueError(f"only {valid.size} configuration(s) have a seed with every rung {r.tolist()}")
        rng = np.random.default_rng(seed)
        if n_arms is None:
            arms = valid
        else:
            if isinstance(n_arms, bool) or not isinstance(n_arms, (int, np.integer)) or not 2 <= n_arms <= valid.size:
                raise ValueError(
                    f"n_arms = {n_arms!r} is out of range; accepted: 2..{valid.size} (configurations with a "
                    f"complete seed at rungs {r.tolist()})"
                )
            arms = np.sort(rng.choice(valid, int(n_arms), replace=False))
        note = ""
        cal: Calibration | None = None
        if isinstance(calibration, FidelityLadder):
            ladder = calibration
            if ladder.M != r.size:
                raise ValueError(f"the ladder has {ladder.M} fidelities but there are {r.size} rungs")
            note = "ladder given"
        else:
            if isinstance(calibration, Calibration):
                cal = calibration
                note = "calibration given"
            elif calibration in ("holdout", "all"):
                rest = np.setdiff1d(np.flatnonzero(~np.isnan(rv.bias()[:, -1])), arms)
                if calibration == "holdout" and rest.size >= 20:
                    cal = calibrate(rv.subset(rest), quantile=quantile, confidence=confidence, cost=cost, holdout=None)
                    note = f"ζ, γ estimated on {rest.size} held-out configurations"
                else:
                    cal = calibrate(rv, quantile=quantile, confidence=confidence, cost=cost, holdout=None)
                    note = "ζ, γ estimated on all configurations (in-sample)"
                cal.fidelity_name = curves.fidelity_name
            else:
                raise ValueError(
                    f"calibration = {calibration!r} is unknown; accepted: 'holdout', 'all', a Calibration or a "
                    "FidelityLadder"
                )
            if cal.M != r.size or not np.allclose(cal.rungs, r):
                raise ValueError("the calibration's rungs differ from rungs")
            ladder = cal.ladder()
        extra = np.broadcast_to(np.asarray(extra_noise, dtype=float), (r.size,))
        sig = estimate_sigma(rv.subset(valid))["pooled"]
        total = np.sqrt(np.where(np.isnan(sig), 0.0, sig) ** 2 + extra**2)
        if isinstance(sigma, str):
            if sigma not in ("max", "top"):
                raise ValueError(f"sigma = {sigma!r} is unknown; accepted: a number > 0, 'max' or 'top'")
            s = float(total.max() if sigma == "max" else total[-1])
            if not s > 0:
                raise ValueError(
                    "the replayed observations are noiseless (one seed per configuration and extra_noise = 0); "
                    "give extra_noise= (e.g. the σ̂ of a source with seeds) or sigma= for the policies"
                )
        else:
            s = float(sigma)
        values = rv.score[arms]
        # a seed is replayed only with every rung: blank the incomplete ones
        values = np.where(complete[arms][:, :, None], values, np.nan)
        labels = [curves.config_key(int(k)) for k in arms]
        src = (
            f"replay of {curves.source or 'learning curves'}: {arms.size} of {valid.size} configurations "
            f"(seed {seed}), {curves.metric_name} ({curves.mode}) at {curves.fidelity_name} {r.tolist()}; {note}; "
            f"noise: a random complete seed's value + N(0, extra_noise²), extra_noise = {extra.tolist()}"
        )
        return cls(
            values,
            ladder,
            sigma=s,
            extra_noise=extra,
            mode=curves.mode,
            metric_name=curves.metric_name,
            labels=labels,
            calibration=cal,
            source=src,
            name=name or f"replay-{curves.metric_name}-{arms.size}x{r.size}",
        )

    # ------------------------------------------------------------------ properties
    @property
    def seeds_per_arm(self) -> np.ndarray:
        """Number of complete seeds replayed per arm."""
        return self.n_seeds.copy()

    @property
    def zeta_coverage(self) -> np.ndarray:
        """Per rung, the fraction of arms with `|µ_k(m) − µ_k(M)| ≤ ζ(m)`: the held-out coverage of the
        ladder's ζ on these arms (1.0 at the last rung)."""
        gap = np.abs(self.means - self.true_means[:, None])
        return np.mean(gap <= np.asarray(self.ladder.zeta)[None, :] + 1e-12, axis=0)

    def metric_of(self, score: float) -> float:
        """The source's metric for a score (`−score` for `mode="min"`).

        Args:
            score: a score (higher is better).
        """
        return score if self.mode == "max" else -score

    # ------------------------------------------------------------------ sampling
    def _draw_seed(self, arms: np.ndarray, u: np.ndarray) -> np.ndarray:
        j = np.minimum((u * self.n_seeds[arms]).astype(np.int64), self.n_seeds[arms] - 1)
        return self._seed_index[arms, j]

    def sample(self, arms: np.ndarray, fidelities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Independent pulls: a fresh random seed per pull, plus the extra noise (vectorised).

        Args:
            arms: integer array of arm indices, each in `0 .. K − 1`.
            fidelities: integer array of rung indices (`0 .. M − 1`), the same shape as `arms`.
            rng: the generator the seeds and the extra noise are drawn from.
        """
        arms = np.asarray(arms, dtype=np.int64)
        fids = np.asarray(fidelities, dtype=np.int64)
        seeds = self._draw_seed(arms, rng.random(arms.shape))
        z = rng.standard_normal(arms.shape)
        return self.values[arms, seeds, fids] + self.extra_noise[fids] * z

    def sampler(self, rng: np.random.Generator, block: int = 4096, *, semantics: str = "independent") -> _ReplaySampler:
        """The simulator's sampler; under `"resumable"` a pull continues the same replica's run.

        Args:
            rng: the generator the seeds and the extra noise are drawn from.
            block: how many uniforms and normals are pre-drawn at a time, a positive integer.
            semantics: `"independent"` (every pull a fresh run) or `"resumable"` (a pull continues the most advanced
                replica of the arm still below the rung; see the module docstring).
        """
        if semantics not in ("independent", "resumable"):
            raise ValueError(f"semantics = {semantics!r} is unknown; accepted: 'independent', 'resumable'")
        return _ReplaySampler(self, rng, block, semantics == "resumable")

    def evaluate(self, arm: int, fidelity: int, rng: np.random.Generator) -> Evaluation:
        """One independent pull of `arm` at rung `fidelity`: a fresh run (random seed), cost `λ(m)`.

        Args:
            arm: the arm, an integer in `0 .. K − 1`.
            fidelity: the rung index, an integer in `0 .. M − 1`.
            rng: the generator the seed and the extra noise are drawn from.
        """
        a, m = self._check(arm, fidelity)
        s = int(self._draw_seed(np.array([a]), rng.random(1))[0])
        v = float(self.values[a, s, m] + self.extra_noise[m] * rng.standard_normal())
        return Evaluation(v, self.metric_of(v), self.ladder.costs[m], s)

    def start_run(self, arm: int, rng: np.random.Generator) -> ReplayRun:
        """A training run of `arm` (a random seed) to advance rung by rung (resumable semantics).

        Args:
            arm: the arm, an integer in `0 .. K − 1`.
            rng: the generator the seed (now) and the extra noise (at every :meth:`ReplayRun.advance`) are drawn
                from; kept by the run.
        """
        a, _ = self._check(arm, 0)
        s = int(self._draw_seed(np.array([a]), rng.random(1))[0])
        return ReplayRun(self, a, s, rng)

    def _check(self, arm: Any, fidelity: Any) -> tuple[int, int]:
        return check_int("arm", arm, 0, self.K - 1), self.ladder.check_index(fidelity)

    def describe(self) -> str:
        """A short text: arms, seeds, the ladder with ζ coverage on the arms, the best arm."""
        cov = self.zeta_coverage
        lines = [
            f"{self.name}: {self.K} arms x {self.M} rungs, {self.metric_name} ({self.mode}); seeds per arm "
            f"{int(self.n_seeds.min())}..{int(self.n_seeds.max())}; policies assume sigma = {self.noise.sigma:.4g}",
            self.ladder.describe(),
            "zeta coverage on the arms: " + ", ".join(f"{c:.3f}" for c in cov),
            f"best arm {self.best_arm} ({self.labels[self.best_arm]!r}): {self.metric_name} = "
            f"{self.metric_of(float(self.true_means[self.best_arm])):.6g}",
        ]
        return "\n".join(lines)

    def __getstate__(self) -> dict[str, Any]:
        # pickled for process-parallel run_many: the calibration (with its gap arrays) is not needed there
        state = dict(self.__dict__)
        state["calibration"] = None
        return state


class ReplayRun:
    """One replayed training run (a fixed seed) advanced through the rungs; see
    :meth:`ReplayBenchmark.start_run`. `advance(m)` returns the value at rung `m > level` and the
    incremental cost `λ(m) − λ(level)`.

    Args:
        bench: the benchmark the run replays.
        arm: the arm (configuration) index, in `0 .. K − 1`.
        seed: the replayed seed, an index into the arm's seeds.
        rng: the generator of the extra noise.
    """

    def __init__(self, bench: ReplayBenchmark, arm: int, seed: int, rng: np.random.Generator) -> None:
        self.bench, self.arm, self.seed, self.rng = bench, arm, seed, rng
        self.level: int | None = None

    def advance(self, fidelity: int) -> Evaluation:
        m = self.bench.ladder.check_index(fidelity)
        cost = self.bench.ladder.incremental_cost(m, self.level)
        v = float(self.bench.values[self.arm, self.seed, m] + self.bench.extra_noise[m] * self.rng.standard_normal())
        self.level = m
        return Evaluation(v, self.bench.metric_of(v), cost, self.seed)


class _ReplaySampler:
    """Draws replayed observations one at a time (uniforms and normals pre-drawn in blocks)."""

    def __init__(self, bench: ReplayBenchmark, rng: np.random.Generator, block: int, resumable: bool) -> None:
        self.bench = bench
        self.rng = rng
        self.block = block
        self.resumable = resumable
        self._vals = bench.values.tolist()
        self._nseed = bench.n_seeds.tolist()
        self._index = bench._seed_index.tolist()
        self._extra = bench.extra_noise.tolist()
        self._u: list[float] = []
        self._z: list[float] = []
        self._pos = 0
        self.replicas: dict[int, list[list[int]]] = {}  # arm -> [[seed, level], ...]

    def _refill(self) -> None:
        self._u = self.rng.random(self.block).tolist()
        self._z = self.rng.standard_normal(self.block).tolist()
        self._pos = 0

    def _new_seed(self, arm: int) -> int:
        n = self._nseed[arm]
        j = min(int(self._u[self._pos] * n), n - 1)
        return self._index[arm][j]

    def draw_one(self, arm: int, fidelity: int) -> float:
        if self._pos >= len(self._u):
            self._refill()
        if self.resumable:
            reps = self.replicas.setdefault(arm, [])
            best = None
            for rep in reps:  # the most advanced replica still below the fidelity (ResumableMeter's rule)
                if rep[1] < fidelity and (best is None or rep[1] > best[1]):
                    best = rep
            if best is None:
                best = [self._new_seed(arm), fidelity]
                reps.append(best)
            else:
                best[1] = fidelity
            seed = best[0]
        else:
            seed = self._new_seed(arm)
        v = self._vals[arm][seed][fidelity] + self._extra[fidelity] * self._z[self._pos]
        self._pos += 1
        return v

    def draw(self, arms: np.ndarray, fidelities: np.ndarray) -> np.ndarray:
        if self.resumable:
            return np.array([self.draw_one(a, f) for a, f in zip(arms.tolist(), fidelities.tolist())], dtype=float)
        return self.bench.sample(arms, fidelities, self.rng)
