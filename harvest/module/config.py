"""A kernel module's CONFIG: the block sizes, num_warps and num_stages it launches with, decided from what the run
recorded, what the autotuner logged, or (a kernel that ran nowhere: an artifact read without a run) the rules
Inductor's heuristics follow, each documented where it is made. Pure: typed inputs in, the config and where it
came from out."""

from __future__ import annotations

import re

from harvest.model import AutotuneWinner, Kernel
from harvest.module.arguments import RenderError, def_constexprs


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def build_config(kernel: Kernel, recorded: AutotuneWinner | None, winner: AutotuneWinner | None,
                 rename: dict[str, str], values: dict[str, int]) -> tuple[dict, str]:
    """Constexpr block sizes, num_warps and num_stages: the config the run recorded (`recorded`), else the
    autotuner's logged winner, else a documented default."""
    constexprs = [p for p in kernel.signature if p in def_constexprs(kernel)]
    chosen = recorded or winner  # what ran in the run, else what the autotuner logged
    if chosen is not None:
        config = {rename.get(k, k): v for k, v in chosen.kwargs.items() if k in constexprs}
        config.update(num_warps=chosen.num_warps, num_stages=chosen.num_stages)
        origin = f"recorded in the run; chosen by {chosen.chosen_by}" if recorded is not None else f"chosen by {chosen.chosen_by}"
        if recorded is not None and kernel.kind == "template" and chosen.chosen_by == "the only config":
            origin = "recorded in the run: the template config max-autotune picked"
    elif isinstance(kernel.heuristic_args.get("config"), dict) and kernel.heuristic == "fixed_config":
        fixed = dict(kernel.heuristic_args["config"])
        config = {rename.get(k, k): v for k, v in fixed.items() if k in constexprs}
        config.update(num_warps=fixed.get("num_warps", 4), num_stages=fixed.get("num_stages", 3))  # (triton.Config's)
        origin = "fixed by Inductor at compile time (@triton_heuristics.fixed_config): no other config was tried"
    else:
        xnumel = values.get("xnumel") or body_constant(kernel, "xnumel") or 1
        config = {}
        rblocks = {p: min(1024, next_power_of_2(values.get(p.replace("_BLOCK", "_numel").lower(), values.get("rnumel", 1))))
                   for p in constexprs if re.fullmatch(r"R\d_BLOCK|RBLOCK", p)}
        for p in constexprs:
            if p == "XBLOCK":
                config[rename.get(p, p)] = pointwise_block(kernel, int(xnumel)) if kernel.kind == "pointwise" else \
                    reduction_rows(kernel, int(xnumel), max(rblocks.values(), default=0) or int(kernel.size_hints.get("r0_", 1)))
            elif p == "YBLOCK":
                config[rename.get(p, p)] = min(32, next_power_of_2(values.get("ynumel", 1)))
            elif p in rblocks:
                config[rename.get(p, p)] = rblocks[p]
        config.update(num_warps=8, num_stages=1)
        origin = "no autotune record in the capture: harvest's default (large blocks: few programs)"
        rows = mix_order_config(kernel)
        if rows:
            config.update({rename.get(k, k): v for k, v in rows.items()})
            origin = "no autotune record in the capture: Inductor's rule for a mix-order reduction's split"
        split = cooperative_config(kernel, int(xnumel), values)
        if split:
            config.update({rename.get(k, k): v for k, v in split.items() if k in constexprs})
            origin = "no autotune record in the capture: Inductor's rule for a cooperative reduction's split"
    for name, value in kernel.constants.items():  # compile-time constants Inductor passes by name
        if name in constexprs and isinstance(value, (int, float, bool)):
            config.setdefault(rename.get(name, name), value)
    missing = [p for p in constexprs if rename.get(p, p) not in config and p not in kernel.constants]
    if missing:
        where = "" if recorded is not None or winner is not None else " (no run was recorded: no config to take it from; --run-artifact records one)"
        raise RenderError(f"no value for constexpr parameter(s) {', '.join(missing)}{where}")
    return config, origin


# A pointwise kernel's block when no run chose one: 32 values a thread at 8 warps on a GPU, and few programs for
# the Triton interpreter, which runs them one at a time (an H200-sized kernel checks in seconds, not minutes).
POINTWISE_BLOCK = 8192


def pointwise_block(kernel: Kernel, xnumel: int) -> int:
    """XBLOCK of a pointwise kernel that ran nowhere: up to POINTWISE_BLOCK, and a divisor of xnumel when the kernel
    has no bounds mask (Inductor left it out because its own blocks were all full)."""
    block = min(POINTWISE_BLOCK, next_power_of_2(xnumel))
    if re.search(r"^\s+xmask = xindex < xnumel\s*$", kernel.source, flags=re.M) is None:
        while block > 1 and xnumel % block:
            block //= 2
    return block


def reduction_rows(kernel: Kernel, xnumel: int, rblock: int) -> int:
    """XBLOCK of a reduction that ran nowhere (an artifact): rows per program as Inductor's own configs take them,
    up to 64 and at most 8192 values a block, a power of two that divides the rows when the kernel has no row mask.
    Fewer, larger programs also let the Triton interpreter, one program at a time, check an H200-sized kernel in
    seconds rather than minutes."""
    masked = re.search(r"^\s+xmask = xindex < xnumel\s*$", kernel.source, flags=re.M) is not None
    rows = 1
    while rows < 64 and (rows * 2) * max(rblock, 1) <= 8192 and (masked or xnumel % (rows * 2) == 0) \
            and rows * 2 <= next_power_of_2(xnumel):
        rows *= 2
    return rows


def mix_order_config(kernel: Kernel) -> dict[str, int]:
    """A mix-order reduction (`RSPLIT_SIZE` in inductor_meta: each program reduces RSPLIT_SIZE rows, XBLOCK at a
    time, over NUM_STAGES pipeline stages) configured as Inductor's persistent_reduction heuristic does it; {} for
    any other kernel."""
    rsplit = kernel.inductor_meta.get("RSPLIT_SIZE")
    if not isinstance(rsplit, int) or rsplit < 1:
        return {}
    rnumel = int(kernel.size_hints.get("r0_", 1))
    xblock = min(max(rsplit // 32, 4 if rnumel <= 512 else 1), 16)
    stages = (2 if rnumel > 8192 else 3) if kernel.inductor_meta.get("mix_order_reduction_allow_multi_stages", True) else 1
    return {"RSPLIT_SIZE": rsplit, "XBLOCK": xblock, "NUM_STAGES": min(max(rsplit // xblock // 4, 1), stages)}


def cooperative_config(kernel: Kernel, xnumel: int, values: dict[str, int]) -> dict[str, int]:
    """A cooperative reduction (RSPLIT programs share a row block, meeting at a grid barrier) configured as Inductor's
    cooperative_reduction heuristic splits it: as many programs as the capture's GPU has SMs (a power of two, at most
    64 per row block) so that all of them run at once, each reducing its share of the row; {} for any other kernel."""
    if kernel.kind != "cooperative_reduction":
        return {}
    device = str(kernel.triton_meta.get("device", ""))
    sms = re.search(r"multi_processor_count=(\d+)", device)
    target = 1 << (int(sms.group(1)).bit_length() - 1) if sms and int(sms.group(1)) > 0 else 1
    rnumel = int(values.get("r0_numel") or body_constant(kernel, "r0_numel") or kernel.size_hints.get("r0_", 1))
    split = max(1, min(rnumel, target // max(xnumel, 1), 64))
    share = -(-rnumel // split)
    persistent = bool(kernel.inductor_meta.get("persistent_reduction"))
    rblock = next_power_of_2(share) if persistent else min(1024, next_power_of_2(share))
    return {"RSPLIT": split, "R0_BLOCK": rblock, "XBLOCK": reduction_rows(kernel, xnumel, rblock)}


def body_constant(kernel: Kernel, name: str) -> int | None:
    """`xnumel = 2048` written inside the kernel body (a size Inductor baked in)."""
    match = re.search(rf"^\s+{name} = (\d+)\s*$", kernel.source, flags=re.M)
    return int(match.group(1)) if match else None
