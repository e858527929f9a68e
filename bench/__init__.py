"""Benchmarks (scripts, not tests): ``python -m bench.<name>``."""
