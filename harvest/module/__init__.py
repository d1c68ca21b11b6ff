"""One kernel's module, from plan to file: plan.py (what the module holds), arguments.py (its ARGUMENTS and launch
parameters), render.py (the text, through templates/), pool.py (every graph's kernels planned and rendered, in
worker processes) and file.py (the one reader of module files, never executing them)."""
