"""Bench: takes an extraction (all of it, one graph directory or one kernel module) that `harvest extract` wrote;
times each kernel module against Inductor's own kernel (in its graph and alone), the eager reference and the CUDA twin,
in a child process on the GPU; gives a `BenchResult` of `BenchRow`s (and `SweepRow`s), written as bench/bench.csv|json.

command.py puts the steps in order; plan.py (what PATH selects, the child's plan), children.py (the processes it
starts), child.py (the timing process), inductor.py (Inductor's own kernel, in its graph and alone), sweep.py (the
configs a sweep tries), timing.py (CUDA-event timing, whose marked section every harness.py holds), output.py
(rows, tables, CSV, plots), ncu.py (`--ncu`).
"""
