"""One module per policy. Every module registers its class with :func:`mf_sched.registry.register`;
the registry imports all modules of this package on first use."""
