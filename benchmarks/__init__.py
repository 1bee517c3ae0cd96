"""Benchmarks, each a script run from the source checkout (`python benchmarks/NAME.py --help`)."""
