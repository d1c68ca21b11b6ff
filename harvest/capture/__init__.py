"""Capture: takes a `Target` (a script, an Inductor artifact or an earlier extraction) and the `ExtractOptions`;
runs the script under torch.compile in a child process (bootstrap.py; a torchrun job's ranks merged by ranks.py), or
reads the artifact or raw/; gives a `Captured`: the `Capture` (a `CapturedGraph` per graph), the `RunOutcome`, the log.

Also the child side of `harvest run --with` (swap.py, launcher.py, ab_timing.py) and an in-process capture
(inprocess.py).
"""
