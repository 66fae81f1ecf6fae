"""Benchmark scripts; importable as `benchmarks.<module>` from the repository root (e.g. `benchmarks.tune_sim`)."""
