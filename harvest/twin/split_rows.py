"""Rows split over blocks: the twin of a cooperative reduction or a split scan (and, with
TwinChoices.split_looped_rows, of every looped row reduction). Each row is split over hv_splits blocks, as many as the
GPU holds at once beside the other rows' (a cooperative launch when more than one); a block's threads stride over
its chunk of the row, each loop covering the chunk in whole steps of the block's threads. The reductions whose
partials are ready together publish them to a workspace before one grid barrier, then each block combines its
row's partials; a carrying scan first takes the totals of the chunks before its block's."""

from __future__ import annotations

import ast

from harvest.twin.body import names_in
from harvest.twin.cpp import Value, Var
from harvest.twin.facts import NoTwin, TwinSource
from harvest.twin.looped import LoopedRows
from harvest.twin.row_kernel import Lanes, RowEmitters, RowKernel
from harvest.twin.row_reductions import reduction_call, softmax_fast
from harvest.twin.scan import scan_call

# the row's first block stores its row values
LANES = Lanes("static_cast<int32_t>(threadIdx.x)", "blockDim.x", "hv::block_reduce", ("threadIdx.x == 0", "hv_split == 0"), ())


def translate(kernel: RowKernel) -> TwinSource:
    out = kernel.out
    emitters = kernel.begin(LANES)
    out.emit("// each row split over hv_splits blocks (more than one: a cooperative launch with every block resident, "
             "one row a block);")
    out.emit(f"// a block's threads stride over its chunk of the row's {kernel.numel_text} elements")
    out.emit("const int32_t hv_split = static_cast<int32_t>(blockIdx.x % hv_splits);  // this block's chunk of its row")
    out.open("for (int64_t hv_row = blockIdx.x / hv_splits; hv_row < hv_rows; hv_row += gridDim.x / hv_splits) {")
    kernel.declare_row("hv_row")
    rows = SplitRows(kernel, emitters)
    step = rows.emit()
    kernel.end_rows()
    slots = len(rows.slots)
    launch_lines = kernel.launch_lines() + [
        f"const int hv_threads = hv::row_threads((hv_rnumel + {step - 1}) / {step});",
        f"const int32_t hv_splits = hv::row_splits(reinterpret_cast<const void*>(&{kernel.facts.name}), hv_rows, hv_rnumel, hv_threads, {step});",
        f"// {slots} reduction{'s' if slots != 1 else ''}: a 16-byte partial each per block, combined after the grid barrier",
        f"torch::Tensor hv_workspace = hv::split_workspace(hv_splits, hv_rows * hv_splits * {16 * slots});",
    ]
    notes = ["each row split over as many blocks as the GPU holds at once beside the other rows' (a cooperative launch "
             "when more than one), threads stride over the block's chunk of the row",
             "per-thread partials combined by warp shuffles and shared memory, then the blocks' partials through a "
             "workspace after a grid barrier (one per group of reductions)"]
    extra = (["unsigned char* hv_workspace", "int32_t hv_splits"],
             ["hv_splits > 1 ? hv_workspace.data_ptr<unsigned char>() : nullptr", "hv_splits"])
    return kernel.finish(launch_lines, "hv::split_blocks(hv_rows, hv_splits)", "hv_threads", notes, extra=extra,
                         cooperative="hv_splits > 1")


class SplitRows(LoopedRows):
    """LoopedRows over the block's chunk of each row; the row's partials combined through the workspace's slots."""

    def __init__(self, kernel: RowKernel, emitters: RowEmitters):
        super().__init__(kernel, emitters)
        self.slots: list[int] = []  # the workspace slots the reductions publish to, a 16-byte partial each
        self.published: dict[int, str] = {}  # a reduction statement's id -> its block's partial, published

    def chunk(self, stop: Value, columns: int) -> tuple[str, Value]:
        """The block's chunk of the row: whole steps, so that vectors stay aligned."""
        out = self.out
        begin, end = out.fresh("hv_begin"), out.fresh("hv_end")
        out.taken |= {begin, end}
        each = f"{columns} * {self.lanes.count}"
        out.emit(f"const int32_t {begin} = hv_split * (({stop.code} + hv_splits * {each} - 1) / (hv_splits * {each})) * ({each});")
        out.emit(f"const int32_t {end} = min({begin} + (({stop.code} + hv_splits * {each} - 1) / (hv_splits * {each})) * ({each}), "
                 f"static_cast<int32_t>({stop.code}));")
        return begin, Value(end, "i32")

    def combine_row(self, stmt: ast.Assign, position: int, result: str, combiner: str) -> tuple[str, list]:
        """The block's partial of `stmt`, published with those of the reductions ready with it (before one grid
        barrier for all of them), then the row's partials gathered."""
        out = self.out
        if id(stmt) not in self.published:  # this reduction and the others whose partials are ready with it
            following = self.body[position + 1 :]
            following = following[: next((i for i, s in enumerate(following) if isinstance(s, ast.For)), len(following))]
            group = [stmt] + [s for s in following if self._ready(s)]
            for member in group:
                ctype, partial, fields = self.thread_partial(member)
                name = out.fresh("hv_block")
                out.taken.add(name)
                self.slots.append(len(self.slots))
                member_kind, _, member_call = reduction_call(member.value)
                member_combiner = self.emitters.reductions.combiner(
                    member_kind, softmax_fast(member_call) if member_kind == "online_softmax_reduce" else "false")
                out.emit(f"const {ctype} {name} = hv::split_publish({partial}, {member_combiner}, hv_workspace, {self.slots[-1]}, hv_splits);")
                self.published[id(member)] = f"{name}, {member_combiner}, hv_workspace, {self.slots[-1]}"
            out.emit(f"hv::grid_sync(hv_splits);  // the blocks of each row have published {'these partials' if len(group) > 1 else 'this partial'}")
        ctype, _, fields = self.thread_partial(stmt, emit=False)
        out.emit(f"const {ctype} {result} = hv::split_gather({self.published[id(stmt)]}, hv_split, hv_splits);")
        return ctype, fields

    def _ready(self, stmt: ast.stmt) -> bool:
        """A reduction whose arguments are all loop accumulators (their copies) or defined before: its partial is ready."""
        if not isinstance(stmt, ast.Assign) or reduction_call(stmt.value) is None:
            return False
        _, arguments, _ = reduction_call(stmt.value)
        used = set().union(*(names_in(a) for a in arguments))
        return bool(used & set(self.copies)) and used <= set(self.copies) | self.defined

    def chunk_carry(self, loop: ast.For, cname: str, begin: str, end: str) -> tuple[str, str] | None:
        """A split row's carrying scan (a split scan read as a row scan): before its block's pass over its chunk, with
        more than one split, a first pass scans the chunk for its total; the blocks publish their totals and, after the
        grid barrier, each takes the combined totals of the chunks before its own as its carry. Returns (the carry, the
        flag that it holds a value); None without a scan."""
        if self.scans is None:
            return None
        out, lanes = self.out, self.lanes
        position = next((i for i, s in enumerate(loop.body) if (c := scan_call(s)) is not None and c.carries), None)
        if position is None or sum(1 for s in loop.body if (c := scan_call(s)) is not None and c.carries) != 1:
            raise NoTwin("a row split over blocks with other than one carrying scan")
        scan = scan_call(loop.body[position])
        carry, have = out.fresh(f"hv_carry_{scan.name}"), out.fresh("hv_have")
        out.taken |= {carry, have}
        start, indent = len(out.lines), out.indent
        out.open("if (hv_splits > 1) {  // this block's chunk total first: the blocks after it need it")
        out.open(f"for (int32_t {cname} = {begin}; {cname} < {end}; {cname} += {lanes.count}) {{")
        out.bind(loop.target.id, Var(cname, "i32", len(out.scopes)))
        out.emit(f"const bool hv_in = {cname} + {lanes.lane} < {end};")
        for stmt in loop.body[:position]:
            if not isinstance(stmt, ast.Expr):  # (stores wait for the second pass)
                self.emitters.lane.statement(stmt)
        value, dtype, combine = self.scans.operands(out, self.exprs, self.axes, scan)
        out.emit(f"(void)hv::block_scan({value}, {combine}, {carry}, {cname} > {begin});")
        out.close()
        self.slots.append(len(self.slots))
        out.emit(f"hv::split_carry({carry}, {have}, {begin} < {end}, {combine}, hv_workspace, {self.slots[-1]}, hv_split, hv_splits);")
        out.close()
        out.lines.insert(start, "    " * indent + f"bool {have} = false;  // {carry} holds the row's values before this tile")
        out.lines.insert(start, "    " * indent + f"{out.ctype(dtype)} {carry}{{}};  // {scan.name}: the row's values before")
        return carry, have
