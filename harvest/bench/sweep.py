"""`harvest bench --sweep`: which configs of an extracted kernel to try, and the plot of what they took.

Pure config generation: `sweep_space(kernel, module)` reads the facts (the kernel's block-size parameters as the
module names them, the axis each one tiles, Inductor's size hints and limits, the module's CONFIG) from the parsed
Inductor kernel and the module as harvest.module.file reads it — never by importing the module — and
`sweep_configs(space)` lists
the configs: powers of two for every block size the module's launch() takes, within what Inductor itself would
allow for this kernel, times num_warps {1, 2, 4, 8, 16}, times num_stages {1, 2, 3, 4} for a looped reduction
(the only kind with a loop for Triton to pipeline). A persistent reduction keeps its whole row in one block: its
reduction block size is fixed inside the kernel body (>= the row length) and is not swept.
"""

from __future__ import annotations

import io
import itertools
import math
import re
from dataclasses import dataclass

from harvest.errors import HarvestError
from harvest.kernel_facts import kernel_facts
from harvest.model import Kernel
from harvest.module.file import ModuleFile, TensorArg
from harvest.writer import write_file

# Inductor's largest block per axis (torch/_inductor/runtime/hints.py TRITON_MAX_BLOCK, CUDA; R0_/R1_ without
# multi-kernel's x16): a sweep never goes past what Inductor would generate itself.
MAX_BLOCK = {"x": 4096, "y": 1024, "z": 1024, "r0_": 4096, "r1_": 2048}
# Smallest block tried per axis (a reduction's rows per program start at 1): a pointwise program of fewer than 32
# elements leaves most of a warp idle.
MIN_BLOCK = {"x": 32, "y": 1, "z": 1, "r0_": 8, "r1_": 8}
NUM_WARPS = (1, 2, 4, 8, 16)
LOOPED_NUM_STAGES = (1, 2, 3, 4)
# Elements one program handles at most (all block sizes multiplied, a persistent row included), unless the
# kernel's own config is bigger: beyond this the registers spill and compile time climbs for nothing.
MAX_BLOCK_ELEMENTS = 8192
DEFAULT_LIMIT = 64
# A matmul template's tiles: BLOCK_M/BLOCK_N/BLOCK_K powers of two in these ranges, GROUP_M as compiled, warps and
# software-pipeline stages as Inductor's mm configs use them, within the shared memory of one SM (Hopper: 227 KiB
# per block) for the A and B tiles of every stage.
TEMPLATE_TILES = {"BLOCK_M": (16, 256), "BLOCK_N": (16, 256), "BLOCK_K": (16, 256)}
TEMPLATE_WARPS = (2, 4, 8)
TEMPLATE_STAGES = (2, 3, 4, 5)
SHARED_MEMORY = 227 * 1024
# Inductor's own mm configs (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps): the list its mm template autotunes
# over by default on CUDA (torch/_inductor/template_heuristics, torch 2.6-2.11), always tried first.
INDUCTOR_MM_CONFIGS = (
    (32, 32, 16, 1, 2), (32, 32, 128, 2, 4), (32, 64, 32, 5, 8), (64, 32, 32, 5, 8), (64, 32, 128, 5, 4),
    (64, 64, 16, 2, 4), (64, 64, 32, 2, 4), (64, 64, 64, 3, 8), (64, 64, 128, 5, 4), (64, 128, 32, 3, 4),
    (64, 128, 32, 4, 8), (64, 128, 64, 3, 4), (64, 128, 128, 4, 4), (128, 64, 32, 3, 4), (128, 64, 32, 4, 8),
    (128, 128, 32, 2, 8), (128, 128, 32, 3, 4), (128, 128, 64, 3, 4), (128, 128, 64, 5, 8),
)


class SweepError(HarvestError):
    """A kernel module whose config cannot be swept (no block sizes in it)."""

    exit_code = 2


@dataclass(frozen=True)
class BlockParam:
    name: str  # as the module's CONFIG names it ("BLOCK_ROWS")
    inductor: str  # Inductor's name ("XBLOCK")
    axis: str  # "x", "y", "z", "r0_", "r1_"
    low: int
    high: int  # the largest value Inductor allows here: min(its max for the axis, the axis' size hint)


@dataclass(frozen=True)
class SweepSpace:
    blocks: tuple[BlockParam, ...]
    num_warps: tuple[int, ...]
    num_stages: tuple[int, ...]
    config: dict  # the module's CONFIG: the config Inductor ran (unless edited)
    fixed_elements: int  # elements per program that are not swept (a persistent reduction's row block)
    max_elements: int
    notes: tuple[str, ...] = ()
    tile_bytes: int = 0  # a matmul template's bytes per operand element: its configs are tiles that fit in shared memory


def axis_of(inductor_block: str) -> str | None:
    """XBLOCK -> "x", R0_BLOCK -> "r0_", RBLOCK (torch < 2.7) -> "r0_"."""
    match = re.fullmatch(r"([XYZ])BLOCK", inductor_block)
    if match:
        return match.group(1).lower()
    match = re.fullmatch(r"R(\d)_BLOCK", inductor_block)
    if match:
        return f"r{match.group(1)}_"
    return "r0_" if inductor_block == "RBLOCK" else None


def block_names(kernel: Kernel, module: ModuleFile) -> dict[str, str]:
    """Inductor block-size parameter -> the module's name for it. Renaming keeps the order of the def's parameters
    (it may drop a size, never a constexpr), so the two defs' constexpr parameters pair up by position."""
    theirs = kernel_facts(kernel.source).function(kernel.name)  # the def of that name, else the last (helpers precede it)
    if theirs is None:
        raise SweepError(f"no def in Inductor's source of {kernel.name}")
    if len(module.constexprs) == len(theirs.constexprs):
        pairs = dict(zip(theirs.constexprs, module.constexprs))
    else:  # an edited signature: the same names only
        pairs = {p: p for p in theirs.constexprs if p in module.constexprs}
    return {inductor: mine for inductor, mine in pairs.items() if axis_of(inductor) is not None}


def _powers_of_two(low: int, high: int) -> list[int]:
    values, value = [], 1
    while value <= high:
        if value >= low:
            values.append(value)
        value *= 2
    return values


def _hint(kernel: Kernel, axis: str) -> int | None:
    hint = kernel.size_hints.get(axis) or (kernel.size_hints.get("r") if axis == "r0_" else None)
    return int(hint) if hint else None


def template_space(kernel: Kernel, module: ModuleFile) -> SweepSpace:
    """A matmul template's space: its tiles (BLOCK_M, BLOCK_N, BLOCK_K), warps and stages; GROUP_M as compiled."""
    config = dict(module.config)
    missing = [tile for tile in TEMPLATE_TILES if tile not in config]
    if missing:
        raise SweepError(f"{kernel.name}: a template whose CONFIG has no {', '.join(missing)} (its tiles are fixed in "
                         "the kernel body: a persistent or TMA template, or a module from an older harvest)")
    operand = next((a for a in module.arguments.values() if isinstance(a, TensorArg)), None)
    size = 4 if operand is not None and operand.dtype in ("float32", "int32") else 2
    blocks = tuple(BlockParam(tile, tile, tile[-1].lower(), min(low, int(config[tile])), max(high, int(config[tile])))
                   for tile, (low, high) in TEMPLATE_TILES.items())
    return SweepSpace(
        blocks=blocks, num_warps=TEMPLATE_WARPS, num_stages=TEMPLATE_STAGES, config=config, fixed_elements=1,
        max_elements=0, tile_bytes=size,
        notes=(f"GROUP_M kept at {config.get('GROUP_M')}; tiles whose A and B stages fit in {SHARED_MEMORY // 1024} KiB "
               "of shared memory, Inductor's own mm configs first",),
    )


def _template_configs(space: SweepSpace, limit: int) -> list[dict]:
    chosen = dict(space.config)

    def fits(m: int, n: int, k: int, stages: int) -> bool:
        return (m * k + k * n) * space.tile_bytes * stages <= SHARED_MEMORY

    configs = [dict(chosen, BLOCK_M=m, BLOCK_N=n, BLOCK_K=k, num_stages=s, num_warps=w)
               for m, n, k, s, w in INDUCTOR_MM_CONFIGS if fits(m, n, k, s)]
    ranges = [_powers_of_two(b.low, b.high) for b in space.blocks]
    around = []
    for (m, n, k), warps, stages in itertools.product(itertools.product(*ranges), space.num_warps, space.num_stages):
        config = dict(chosen, BLOCK_M=m, BLOCK_N=n, BLOCK_K=k, num_warps=warps, num_stages=stages)
        if fits(m, n, k, stages) and m * n >= 32 * warps and config not in configs:
            around.append(config)
    around.sort(key=lambda c: _distance(c, chosen, space))
    configs = [c for c in configs if c != chosen]
    return [chosen, *configs, *around][:max(limit, 1)]


def sweep_space(kernel: Kernel, module: ModuleFile) -> SweepSpace:
    """What can be swept for this kernel: block sizes the module's CONFIG sets, warps, stages; with their limits."""
    if kernel.kind == "template":
        return template_space(kernel, module)
    config = dict(module.config)
    names = block_names(kernel, module)
    persistent = kernel.kind == "persistent_reduction" or kernel.heuristic == "persistent_reduction"
    notes = []
    blocks = []
    for inductor, mine in names.items():
        axis = axis_of(inductor)
        assert axis is not None
        if mine not in config:
            continue
        hint = _hint(kernel, axis)
        high = min(MAX_BLOCK.get(axis, 1024), hint if hint else MAX_BLOCK.get(axis, 1024))
        if axis.startswith("r") and persistent:  # one block holds the whole row: the block must cover it
            low = high
        elif kernel.kind != "pointwise" and not axis.startswith("r"):  # rows per program: one is a sensible start
            low = 1
        else:
            low = min(MIN_BLOCK.get(axis, 1), high)
        high = max(high, int(config[mine]))  # never drop the config the kernel ran with
        low = min(low, int(config[mine]))
        blocks.append(BlockParam(mine, inductor, axis, low, high))
    fixed = 1
    if persistent and not any(b.axis.startswith("r") for b in blocks):
        row = _hint(kernel, "r0_")
        if row:
            fixed = row
            notes.append(f"persistent reduction: the row block is fixed at {row} inside the kernel (>= the row length); not swept")
    if not blocks:
        raise SweepError(f"{kernel.name}: its launch takes no block-size parameter, so there is nothing to sweep but warps")
    looped = kernel.kind == "reduction" and any(b.axis.startswith("r") for b in blocks)
    stages = LOOPED_NUM_STAGES if looped else (int(config.get("num_stages", 1)),)
    if not looped:
        notes.append(f"num_stages kept at {stages[0]}: no loop for Triton to pipeline")
    chosen_elements = math.prod(int(config[b.name]) for b in blocks) * fixed
    return SweepSpace(
        blocks=tuple(blocks),
        num_warps=NUM_WARPS,
        num_stages=stages,
        config=config,
        fixed_elements=fixed,
        max_elements=max(MAX_BLOCK_ELEMENTS, chosen_elements),
        notes=tuple(notes),
    )


def _distance(config: dict, chosen: dict, space: SweepSpace) -> float:
    """How far a config is from the kernel's own, in doublings and halvings (stages count one a step)."""
    steps = sum(abs(math.log2(config[b.name] / chosen[b.name])) for b in space.blocks)
    steps += abs(math.log2(config["num_warps"] / chosen.get("num_warps", 4)))
    return steps + abs(config["num_stages"] - chosen.get("num_stages", 1))


def sweep_configs(space: SweepSpace, limit: int = DEFAULT_LIMIT) -> list[dict]:
    """Every config of the space, the kernel's own first; the `limit` nearest to it when there are more.

    A config's keys are the module's CONFIG keys (other constexprs keep their CONFIG values). Skipped: programs of
    more than max_elements elements, and programs with fewer elements than threads (32 x num_warps). The kernel's
    own config is always kept, whatever the rules say. A matmul template's: its own, Inductor's mm configs, then
    the tiles nearest to its own.
    """
    if space.tile_bytes:
        return _template_configs(space, limit)
    chosen = dict(space.config)
    ranges = [_powers_of_two(b.low, b.high) for b in space.blocks]
    configs = []
    for values in itertools.product(*ranges):
        elements = math.prod(values) * space.fixed_elements
        if elements > space.max_elements:
            continue
        for warps, stages in itertools.product(space.num_warps, space.num_stages):
            if elements < 32 * warps:
                continue
            config = dict(chosen)
            config.update({b.name: v for b, v in zip(space.blocks, values)})
            config.update(num_warps=warps, num_stages=stages)
            configs.append(config)
    if chosen not in configs:
        configs.append(chosen)
    if len(configs) > limit:
        nearest = sorted(range(len(configs)), key=lambda i: (_distance(configs[i], chosen, space), i))[:limit]
        configs = [configs[i] for i in sorted(nearest)]
    configs.remove(chosen)
    return [chosen, *configs]


def config_label(config: dict, space_blocks: tuple[str, ...]) -> str:
    """`BLOCK_ROWS=4 BLOCK_COLS=512 w4 s1`: a config in a table cell or on a plot's axis."""
    blocks = " ".join(f"{name}={config[name]}" for name in space_blocks)
    return f"{blocks} w{config['num_warps']} s{config['num_stages']}".strip()


def _blocks_of(row) -> dict[str, int]:
    return {name: int(value) for name, value in (item.split("=", 1) for item in row.blocks.split())}


def plot_sweep(rows: list, title: str, eager: tuple | None, path, blocks: tuple[str, ...]):
    """A PNG of a sweep (rows: bench.SweepRow): median per config with its p20-p80 band, the kernel's own config
    (Inductor's choice) starred, the eager reference as a dashed line with its band. One block size and one
    num_stages: time over the block size, a line per num_warps (the seed's BLOCK_SIZE plot); otherwise every config
    on one axis, fastest first. Returns the path, or None without matplotlib or without a timed config."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    timed = [row for row in rows if row.median_ms is not None]
    if not timed:
        return None
    figure, axes = plt.subplots(figsize=(10, 5.5))
    choice = next((row for row in timed if row.inductor_choice), None)
    if len(blocks) == 1 and len({row.num_stages for row in timed}) == 1:
        block = blocks[0]
        for warps in sorted({row.num_warps for row in timed}):
            points = sorted((_blocks_of(row)[block], row) for row in timed if row.num_warps == warps)
            xs = [x for x, _ in points]
            (line,) = axes.plot(xs, [r.median_ms for _, r in points], marker="o", markersize=4, label=f"num_warps={warps}")
            axes.fill_between(xs, [r.p20_ms for _, r in points], [r.p80_ms for _, r in points], color=line.get_color(), alpha=0.2)
        axes.set_xscale("log", base=2)
        axes.set_xlabel(block)
        if choice is not None:
            axes.plot([_blocks_of(choice)[block]], [choice.median_ms], marker="*", markersize=16, color="black", linestyle="none",
                      label=f"Inductor's choice: {choice.config} ({choice.median_ms:.4f} ms)")
    else:
        ordered = sorted(timed, key=lambda row: row.median_ms)
        xs = list(range(len(ordered)))
        axes.plot(xs, [r.median_ms for r in ordered], marker="o", markersize=3, linestyle="-", label="median")
        axes.fill_between(xs, [r.p20_ms for r in ordered], [r.p80_ms for r in ordered], alpha=0.25, label="p20-p80")
        step = max(1, len(ordered) // 40)
        axes.set_xticks(xs[::step])
        axes.set_xticklabels([r.config for r in ordered][::step], rotation=90, fontsize=6)
        axes.set_xlabel("config, fastest first")
        if choice is not None:
            axes.plot([ordered.index(choice)], [choice.median_ms], marker="*", markersize=16, color="black", linestyle="none",
                      label=f"Inductor's choice: {choice.config} ({choice.median_ms:.4f} ms)")
    if eager is not None and eager[0] is not None:
        axes.axhline(eager[0], color="gray", linestyle="--", label=f"eager reference ({eager[0]:.4f} ms)")
        if eager[1] is not None and eager[2] is not None:
            axes.axhspan(eager[1], eager[2], color="gray", alpha=0.12)
    failed = len(rows) - len(timed)
    if failed:
        axes.text(0.01, 0.01, f"{failed} config(s) failed the check or did not compile: not timed", transform=axes.transAxes, fontsize=8)
    axes.set_ylabel("ms (median; band: p20-p80)")
    axes.set_title(title, fontsize=9)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=120, metadata={"Software": None})
    plt.close(figure)
    write_file(path, image.getvalue())
    return path
