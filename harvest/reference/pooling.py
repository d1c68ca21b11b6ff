"""Inductor's max-pooling prims written out with eager ops, for the reference.

Inductor lowers max-pooling to `prims._low_memory_max_pool_with_offsets` (the max of each window and the position of
that max within its window, as an int8 offset) and its backward's index decode to
`prims._low_memory_max_pool_offsets_to_indices` (those offsets back to flat indices into the input's pooled plane).
Both are registered only once Inductor is imported, and a module must not import it: the reference computes the
same values with `aten.max_pool{2,3}d_with_indices` and the offset arithmetic, one statement per pooled dimension.
"""

from __future__ import annotations

from harvest.model import FxList
from harvest.reference.fragment import MAX_POOL_WITH_OFFSETS, OFFSETS_TO_INDICES, Op


def _pooled_dims(op: Op) -> int | None:
    kernel = op.args[1] if len(op.args) > 1 else None
    return len(kernel.items) if isinstance(kernel, FxList) and len(kernel.items) in (2, 3) else None


def _window_start(like: str, axis: int, dims: int) -> str:
    """Where each output position's window starts along pooled dim `axis` (broadcast along that dim of `like`)."""
    view = "" if axis == dims - 1 else ".view(" + ", ".join(["-1"] + ["1"] * (dims - 1 - axis)) + ")"
    return f"torch.arange({like}.shape[{axis - dims}], device={like}.device){view} * pool_stride[{axis}] - pool_padding[{axis}]"


def _product(terms: list[str]) -> str:
    return " * ".join(terms)


def _times(value: str, terms: list[str]) -> str:
    return f"{value} * {_product(terms)}" if terms else value


def _divided(value: str, terms: list[str]) -> str:
    return f"{value} // ({_product(terms)})" if len(terms) > 1 else f"{value} // {terms[0]}" if terms else value


def pooling_statements(op: Op, name: str, args: list[str]) -> list[str] | None:
    """Statements (unindented) that leave `op`'s value in `name`, its arguments rendered as `args`; None when the
    op is not one of the pooling prims or its arguments are not as the prim's schema has them. Their locals are
    named pool_*: FX names nodes after their ops, and no op is called that."""
    dims = _pooled_dims(op)
    if dims is None or len(args) != 6:
        return None
    if op.target == MAX_POOL_WITH_OFFSETS:
        x, ceil_mode = args[0], args[5]
        lines = ["# Inductor's prims._low_memory_max_pool_with_offsets: each window's max, and where in its window "
                 "it lies (an int8 offset),",
                 f"# from max_pool{dims}d_with_indices' flat index into the input's pooled dims",
                 f"pool_window, pool_stride, pool_padding, pool_dilation = {', '.join(args[1:5])}",
                 f"pool_max, pool_index = torch.ops.aten.max_pool{dims}d_with_indices.default({x}, pool_window, "
                 f"pool_stride, pool_padding, pool_dilation, {ceil_mode})",
                 "pool_offset = torch.zeros_like(pool_index)"]
        for axis in range(dims):
            coordinate = f"{_divided('pool_index', [f'{x}.shape[{a - dims}]' for a in range(axis + 1, dims)])} % {x}.shape[{axis - dims}]"
            step = f"({coordinate} - ({_window_start('pool_index', axis, dims)})) // pool_dilation[{axis}]"
            lines.append(f"pool_offset += {_times(step, [f'pool_window[{a}]' for a in range(axis + 1, dims)])}")
        lines.append(f"{name} = (pool_max, pool_offset.to(torch.int8))")
        return lines
    if op.target == OFFSETS_TO_INDICES:
        lines = ["# Inductor's prims._low_memory_max_pool_offsets_to_indices: each offset within its window back to "
                 "a flat index into the input's pooled dims",
                 f"pool_window, pool_size, pool_stride, pool_padding, pool_dilation = {', '.join(args[1:6])}",
                 f"pool_offset = {args[0]}.to(torch.int64)",
                 f"{name} = torch.zeros_like(pool_offset)"]
        for axis in range(dims):
            step = f"{_divided('pool_offset', [f'pool_window[{a}]' for a in range(axis + 1, dims)])} % pool_window[{axis}]"
            at = f"{_window_start('pool_offset', axis, dims)} + ({step}) * pool_dilation[{axis}]"
            lines.append(f"{name} += {_times(f'({at})', [f'pool_size[{a}]' for a in range(axis + 1, dims)])}")
        return lines
    return None
