"""`harvest twin`: the CUDA C++ twin of each extracted Triton kernel, the same computation one element (or row) a thread.
Takes: an extraction's kernel modules, read as text (never imported), and TwinChoices (the translators' tunables).
Gives: TwinSource per kernel (.cu, launcher, notes) or NoTwin with the reason; command.py writes OUT/<graph>/twin/.

Input is the text of an extracted kernel module, read as data with `ast` (never imported): the kernel between its
`# >>> kernel` markers, CONFIG, ARGUMENTS (dtypes of the pointers, values of the scalars) and the grid of launch().
Output is CUDA C++ source (`extern "C" __global__`, only CUDA headers) and the C++ launcher that load_inline builds.

How a Triton program maps onto CUDA threads:
- pointwise (one or two program axes): one thread per element, no grid-stride loop; flat 1-D kernels whose loads and
  stores are at the element's own index move 16 bytes per access when the pointers allow it (aligned fast path,
  scalar tail).
- reductions (rows x reduction axis): harvest.twin.reduction picks a strategy from the kernel's facts: one thread
  block per row, its threads striding over the row; one warp per short row; 32 rows a block where the reduced
  dimension is the outer one; a row split over blocks for a cooperative reduction or a split scan. Inductor's own
  reduction loops become the threads' loops (each thread folds its share of every accumulator); a persistent
  reduction gets one pass per reduction. Per-thread partials are combined with warp shuffles and shared memory.
- mix-order reductions (rows split over programs, column sums to a workspace): one thread block per program, over
  its rows one after the other; each column's sum kept in shared memory by the thread it belongs to.
A kernel outside the subset raises NoTwin with the reason; there is never a twin that computes something else.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from harvest.twin.body import find_axes, program_numels, program_offsets_apart
from harvest.twin.choices import DEFAULT_CHOICES, TwinChoices
from harvest.twin.facts import ModuleFacts, NoTwin, TwinSource, read_module
from harvest.twin.foreach import foreach_branches, translate_foreach
from harvest.twin.pointwise import translate_pointwise
from harvest.twin.reduction import mix_order_loop, translate_mix_order, translate_reduction

__all__ = ["NoTwin", "TwinChoices", "TwinSource", "read_module", "translate"]


def translate(facts: ModuleFacts, choices: TwinChoices = DEFAULT_CHOICES) -> TwinSource:
    """The CUDA twin of a kernel, or NoTwin with the reason. choices: the translators' choices (TwinChoices: the
    defaults are the twins as timed)."""
    foreach = foreach_branches(facts)
    if foreach is not None:
        return translate_foreach(facts, *foreach)
    mix_order = mix_order_loop(facts)
    if mix_order is not None:
        return translate_mix_order(facts, mix_order, choices)
    facts = replace(facts, body=tuple(program_offsets_apart(list(facts.body))))
    axes = find_axes(facts)
    facts = program_numels(facts, axes)
    has_loop = any(isinstance(s, ast.For) for s in facts.body)
    if axes.reduction_base is None and not has_loop:
        return translate_pointwise(facts, axes)
    if len(axes.program) != 1 or 0 not in axes.program:
        raise NoTwin("a reduction over more than one program axis")
    return translate_reduction(facts, axes, has_loop, choices)
