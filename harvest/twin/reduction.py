"""Row reductions: the dispatcher that picks, from the kernel's facts, how its rows map onto CUDA threads; one module
per way.

    warp_rows.py    a persistent row up to choices.warp_row_limit long: one warp per row
    columns.py      loads that walk memory along the rows (the reduced dimension is the outer one): 32 rows a block
    split_rows.py   a cooperative reduction or a split scan (choices.split_looped_rows: any looped row): a row over blocks
    block_rows.py   the rest: one block per row
    mix_order.py    Inductor's split of rows over programs, column sums to a workspace (harvest.twin.translate finds it)

Within a strategy, a persistent row is a pass per reduction (persistent.py) and a looped one the threads' own loops
(looped.py, vector_loads.py); a scan (scan.py) is a statement of either. row_reductions.py: what each reduction
computes; row_kernel.py: the row kernel every strategy starts from (RowKernel) and how its threads share rows (Lanes).
"""

from __future__ import annotations

from harvest.twin import block_rows, columns, split_rows, warp_rows
from harvest.twin.body import Axes
from harvest.twin.choices import TwinChoices
from harvest.twin.facts import ModuleFacts, TwinSource
from harvest.twin.mix_order import mix_order_loop, translate_mix_order
from harvest.twin.row_kernel import RowKernel

__all__ = ["mix_order_loop", "translate_mix_order", "translate_reduction"]


def translate_reduction(facts: ModuleFacts, axes: Axes, looped: bool, choices: TwinChoices) -> TwinSource:
    """The twin of a reduction over rows (program axis 0), persistent or `looped`, by the strategy its facts pick."""
    kernel = RowKernel.read(facts, axes, looped, choices)
    # a scan takes its row along the lanes, in the row's order, even where the row is the outer dimension
    if kernel.scans is None and columns.reduces_columns(kernel.body, axes, kernel.row_name, facts):
        return columns.translate(kernel)
    if not looped and kernel.rnumel.code.isdigit() and 0 < int(kernel.rnumel.code) <= choices.warp_row_limit:
        return warp_rows.translate(kernel)
    # (split_looped_rows splits no scan of Inductor's: its carry between tiles is its own)
    if looped and (facts.split_rows or (choices.split_looped_rows and kernel.scans is None)):
        return split_rows.translate(kernel)
    return block_rows.translate(kernel)
