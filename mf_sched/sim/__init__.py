"""Simulation and sample-complexity bounds for the fixed-confidence problem.

:mod:`~mf_sched.sim.instance` (problem instances and their file format), :mod:`~mf_sched.sim.simulate` (run a
policy on an instance, many runs in parallel), :mod:`~mf_sched.sim.bounds` and
:mod:`~mf_sched.sim.alternative` (instance-dependent lower bounds), :mod:`~mf_sched.sim.iise_runner` (the
exact vectorised IISE runner for the paper-scale benchmarks). The public names are also exported from
:mod:`mf_sched` itself.
"""
