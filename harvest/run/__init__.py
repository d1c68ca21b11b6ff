"""Run: takes a target script and an extraction with edited kernel modules (`harvest run TARGET --with DIR`); plans
which modules replace which kernels (plan.py: `Swap`s), runs the target twice in capture children and compares every
graph output; gives a `RunResult` (`OutputCheck`s, the first difference, GPU timings) and runs/<n>/run.md|json.
"""
