"""`harvest bench` and `harvest sweep`: command.py (plans the runs, writes bench/), child.py (the process that times
on the device), inductor.py (Inductor's own kernel, in its graph), sweep.py (the configs a sweep tries), timing.py
(CUDA-event timing, whose marked section every harness.py holds) and output.py (tables, bench.csv, plots)."""
