"""Continuous search spaces: :mod:`~mf_sched.continuous.space` (spaces and their point tables),
:mod:`~mf_sched.continuous.gp` (the Gaussian-process model of MF-GP-UCB) and
:mod:`~mf_sched.continuous.functions` (multi-fidelity benchmark functions)."""
