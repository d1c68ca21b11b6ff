"""Module: takes each captured graph (`CapturedGraph`) parsed and fused into a `GraphPlan` of `RenderJob`s, one per
kernel with its launch, fusion and record; renames it, builds its reference, plans it (`ModulePlan`) and renders it;
gives a `GraphResult` per graph (manifest entry, module sources, kernels left out) and the extraction's harness.py.

pool.py (every graph planned and rendered, in forked workers), shared.py (a torchrun job's kernels the ranks share,
written once), plan.py (what the module holds), arguments.py (its ARGUMENTS and launch parameters), render.py (the
text, through templates/), file.py (the one reader of module files, never executing them).
"""
