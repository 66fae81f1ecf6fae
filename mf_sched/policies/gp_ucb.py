"""GP-UCB at the highest fidelity: the single-fidelity baseline of MF-GP-UCB, on the same code path.

Paper: N. Srinivas, A. Krause, S. Kakade, M. Seeger, *Gaussian Process Optimization in the Bandit
Setting: No Regret and Experimental Design*, ICML 2010 (GP-UCB), in the practical form Kandasamy et al.
(2016) use as their baseline (App. A.2, Algorithm 2; App. B): `x_t = argmax_x µ_{t−1}(x) +
β_t^{1/2} σ_{t−1}(x)` with `β_t = 0.2·d·log(2t)`, queried at fidelity `M` only. The authors' code
runs it through the MF-GP-UCB strategy with a single GP and no ζ, and so does this class: it is
:class:`~mf_sched.policies.mf_gp_ucb.MFGPUCB` restricted to the top fidelity, with the same
initialisation capital (`⌊Λ_0/λ^(M)⌋` design points at fidelity `M`), data-dependent prior mean,
noise, hyper-parameter refits every 25 iterations, DIRECT + polish acquisition optimiser, search
space encoding, parallel-worker behaviour (GP-BUCB hallucination) and protocol details. Every option
of MF-GP-UCB is accepted; those about lower fidelities (ζ, γ) have no effect.

Example:
    >>> from mf_sched.continuous.functions import get_function
    >>> f = get_function("currin")
    >>> policy = GPUCB(f.space, f.ladder, budget=200, seed=0, acq_maxfun=200)
    >>> pulls = policy.ask_batch()        # the initial design: 10 points at the top fidelity
    >>> len(pulls), {p.fidelity for p in pulls}
    (10, {1})
"""

from __future__ import annotations

from mf_sched.policies.mf_gp_ucb import MFGPUCB
from mf_sched.registry import register

__all__ = ["GPUCB"]


@register
class GPUCB(MFGPUCB):
    """GP-UCB (Srinivas et al. 2010) at the highest fidelity, as the baseline of Kandasamy et al. 2016.
    Arguments as :class:`~mf_sched.policies.mf_gp_ucb.MFGPUCB`."""

    name = "gp-ucb"
    paper = "Srinivas, Krause, Kakade, Seeger 2010 (ICML), GP-UCB; practice of Kandasamy et al. 2016 App. B"
    summary = "GP-UCB at the highest fidelity only (baseline of MF-GP-UCB)"
    single_fidelity = True
