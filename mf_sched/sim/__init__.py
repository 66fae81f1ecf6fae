"""Simulation and sample-complexity bounds for the fixed-confidence problem.

:mod:`~mf_sched.sim.instance` (problem instances and their file format), :mod:`~mf_sched.sim.simulate` (run a
policy on an instance, many runs in parallel), :mod:`~mf_sched.sim.bounds` (every instance-dependent lower bound,
from :mod:`~mf_sched.sim.cost_bound`, :mod:`~mf_sched.sim.tight_bound` and :mod:`~mf_sched.sim.regret_bounds`;
the closest alternative model they use is :mod:`~mf_sched.sim.alternative`), :mod:`~mf_sched.sim.iise_runner` (the
exact vectorised IISE runner for the paper-scale benchmarks). The public names are also exported from
:mod:`mf_sched` itself.
"""
