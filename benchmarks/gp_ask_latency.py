"""Time per ask of GP-UCB and MF-GP-UCB with 200 and 1,000 observations, d = 6 (issue goal: < 1 s).

For each n, a policy on Hartmann-6's unit cube gets its initial design and then n observations in
total (random points with Hartmann-6 values, registered with ``adopt_point``: extras enter the GPs
like any observation). GP-UCB holds all n at the top fidelity; MF-GP-UCB (4 fidelities) splits them
50/20/15/15 %. The DIRECT budget is the one the policy uses at iteration t = n (the code's
``⌈7·min(5,d)²·√min(t,1000)⌉``: 2,475 at n = 200, 5,534 at n = 1,000). We time, per decision,

* **ask**: one ``tell`` (the posterior of the told fidelity is rebuilt: a Cholesky) + one ``ask``
  (DIRECT + L-BFGS-B polish + the fidelity rule), median over ``--reps`` decisions;
* **refit**: one hyper-parameter refit of every fidelity (DIRECT 200 + L-BFGS-B per fidelity), paid
  every 25 iterations — shown amortised (/25) too.

Baselines measured in the same process, reported as ratios:

* **DIRECT floor**: ``scipy.optimize.direct`` with the same budget on a constant function (the
  optimiser's own cost);
* **sklearn acquisition**: the same number of acquisition evaluations through
  ``GaussianProcessRegressor.predict(x, return_std=True)`` one point at a time (timed on 200 calls and
  scaled), i.e. what the fast posterior path of ``mf_sched.continuous.gp`` saves.

Times are CPU seconds of this process (``time.process_time``) with one BLAS thread
(``OPENBLAS_NUM_THREADS=1``): the development machine's 2 cores are shared, so wall time there mostly
measures the other users; on an idle core wall time equals CPU time.

    python -m benchmarks.gp_ask_latency [--n 200 1000] [--reps 5]
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.optimize import direct  # noqa: E402

from benchmarks._common import meta, print_table, pyplot, save_figure, write_json  # noqa: E402
from mf_sched import FidelityLadder  # noqa: E402
from mf_sched._progress import Progress  # noqa: E402
from mf_sched.continuous.functions import get_function  # noqa: E402
from mf_sched.policies.gp_ucb import GPUCB  # noqa: E402
from mf_sched.policies.mf_gp_ucb import MFGPUCB  # noqa: E402

F = get_function("hartmann6")
SPLIT = (0.5, 0.2, 0.15, 0.15)


def maxfun_at(t: int, d: int = 6) -> int:
    return int(math.ceil(7 * min(5, d) ** 2 * math.sqrt(min(t, 1000))))


def build(kind: str, n: int, seed: int = 0) -> MFGPUCB:
    rng = np.random.default_rng(seed)
    if kind == "gp-ucb":
        ladder = FidelityLadder([1.0])
        p: MFGPUCB = GPUCB(F.space, ladder, n_arms=n + 100, seed=seed, init_capital=10.0, acq_maxfun=maxfun_at(n))
        fids = np.zeros(n, dtype=int)
        f = lambda x, m: F(x, 3)  # noqa: E731
    else:
        p = MFGPUCB(F.space, F.ladder, n_arms=n + 100, seed=seed, init_capital=60.0, acq_maxfun=maxfun_at(n))
        fids = np.repeat(np.arange(4), np.round(np.array(SPLIT) * n).astype(int))[:n]
        f = F
    design = p.ask_batch()
    p.tell_batch(design, [f(p.x(q), q.fidelity) for q in design])
    have = np.bincount([q.fidelity for q in design], minlength=p.M)
    need = np.bincount(fids, minlength=p.M) - have
    for m in range(p.M):
        for _ in range(max(int(need[m]), 0)):
            x = rng.random(6)
            q = p.adopt_point(dict(zip(F.space.names, x.tolist())), m)
            p.tell(q, f(x, m))
    return p


def time_policy(kind: str, n: int, reps: int) -> dict:
    p = build(kind, n)
    f = (lambda x, m: F(x, 3)) if kind == "gp-ucb" else F
    q = p.ask()  # first decision also builds every posterior: not counted
    asks = []
    for _ in range(reps):
        t0 = time.process_time()
        p.tell(q, f(p.x(q), q.fidelity))
        q = p.ask()
        asks.append(time.process_time() - t0)
    t0 = time.process_time()
    p.refit()
    refit = time.process_time() - t0
    # baselines, same process
    maxfun = p.acq_maxfun
    t0 = time.process_time()
    direct(lambda z: 0.0, [(0.0, 1.0)] * 6, maxfun=maxfun, maxiter=maxfun, locally_biased=False, eps=1e-4)
    floor = time.process_time() - t0
    from sklearn.gaussian_process import GaussianProcessRegressor

    from mf_sched.continuous.gp import sklearn_kernel

    per_m = []
    for m in p.fidelities_used:
        g = p.gp_inputs(m)
        if g["X"].shape[0] == 0:
            continue
        ref = GaussianProcessRegressor(
            kernel=sklearn_kernel(p.kernel, 6, g["theta"], None, False), alpha=g["noise_var"], optimizer=None
        ).fit(g["X"], g["y"])
        Z = np.random.default_rng(1).random((200, 6))
        t0 = time.process_time()
        for z in Z:
            ref.predict(z[None], return_std=True)
        per_m.append((time.process_time() - t0) / 200)
    sk = maxfun * sum(per_m)
    ask = float(np.median(asks))
    return {
        "policy": kind,
        "n_observations": int(p.n_pulls),
        "per_fidelity": np.bincount(p.observations()["fidelity"], minlength=p.M).tolist(),
        "acq_maxfun": maxfun,
        "ask_s_median": ask,
        "ask_s_all": asks,
        "refit_s": refit,
        "refit_amortised_s": refit / 25,
        "direct_floor_s": floor,
        "sklearn_acquisition_s": sk,
        "ask_over_direct_floor": ask / floor,
        "sklearn_over_ask": sk / ask,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", nargs="+", type=int, default=[200, 1000])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "gp_ask_latency.json"))
    args = ap.parse_args(argv)
    rows = []
    jobs = [(k, n) for n in args.n for k in ("gp-ucb", "mf-gp-ucb")]
    with Progress(len(jobs), "ask latency") as bar:
        for k, n in jobs:
            rows.append(time_policy(k, n, args.reps))
            bar.update()
    columns = [("policy", "<10"), ("n", ">5"), ("obs/fidelity", ">20"), ("DIRECT evals", ">12"),
               ("ask CPU s", ">9.3f"), ("goal", ">5"), ("refit s (/25)", ">14"), ("ask/DIRECT floor", ">16.1f"),
               ("sklearn-path/ask", ">16.1f")]  # fmt: skip
    table = (
        (r["policy"], r["n_observations"], "/".join(str(v) for v in r["per_fidelity"]), r["acq_maxfun"],
         r["ask_s_median"], "< 1 s", f"{r['refit_s']:.2f} ({r['refit_amortised_s']:.2f})", r["ask_over_direct_floor"],
         r["sklearn_over_ask"])
        for r in rows
    )  # fmt: skip
    print_table(columns, table, rule=True)
    out = Path(args.out)
    write_json(out, {"benchmark": "gp_ask_latency", "machine": meta(platform=platform.platform()), "rows": rows})
    plt = pyplot()
    if plt is None:
        return 0
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for k, c in (("gp-ucb", "tab:orange"), ("mf-gp-ucb", "tab:blue")):
        rs = [r for r in rows if r["policy"] == k]
        n_obs = [r["n_observations"] for r in rs]
        ax.plot(n_obs, [r["ask_s_median"] for r in rs], "o-", color=c, label=k)
        with_refit = [r["ask_s_median"] + r["refit_amortised_s"] for r in rs]
        ax.plot(n_obs, with_refit, "o--", color=c, alpha=0.5, label=f"{k} + refit/25")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("observations")
    ax.set_ylabel("CPU seconds per decision")
    ax.set_title("ask latency, d = 6 (1 BLAS thread)")
    ax.legend(fontsize=7)
    save_figure(fig, out.with_suffix(".png"), dpi=110)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
