"""Render one standalone kernel module from its plan: kernel, launcher, make_inputs, eager reference, a checking __main__.

Pure: `render(plan) -> str`. Every decision is in the plan (harvest.module_plan); this only writes it out through
templates/kernel.py.j2. The module reads like Triton's tutorial 01 and imports only torch and triton (plus Inductor's
triton_helpers where a kernel needs a helper plain Triton lacks).
"""

from __future__ import annotations

import functools
import pprint
from pathlib import Path

from harvest.interpret_shim import SHIM_SOURCE
from harvest.module_arguments import Argument, Storage
from harvest.module_plan import Grid, ModulePlan
from harvest.resources import load_template


@functools.lru_cache(maxsize=1)
def timing_source() -> str:
    """The marked timing section of harvest/timing.py, pasted into every module: its --bench times with the same
    lines as `harvest bench` (read as text: importing harvest.timing would import torch here)."""
    text = (Path(__file__).resolve().parent / "timing.py").read_text(encoding="utf-8")
    return text[text.index("# >>> timing") : text.index("# <<< timing") + len("# <<< timing")]


def argument_line(arg: Argument) -> str:
    """One entry of ARGUMENTS: `"x": View(storage, shape, stride, offset, dtype),` or `"n": value,`."""
    if arg.is_tensor:
        return f'"{arg.param}": View({arg.storage}, {arg.shape}, {arg.stride}, {arg.offset}, {arg.dtype}),'
    return f'"{arg.param}": {arg.value!r},' + (f"  # {arg.note}" if arg.note else "")


def storage_line(storage: Storage) -> str:
    """One entry of STORAGES, with the parameters that view it."""
    return f"Storage({storage.lo}, {storage.hi}, {storage.fill}, {storage.high}),  # {', '.join(storage.views)}"


def grid_text(grid: Grid) -> str:
    """The grid expression launch() computes (or the recorded grid, as it is)."""
    if grid.recorded is not None:
        return repr(grid.recorded)
    sizes = [a.size if a.block is None else f'triton.cdiv({a.size}, config["{a.block}"])' for a in grid.axes]
    return "(" + ", ".join(sizes) + ",)"


def render(plan: ModulePlan) -> str:
    """The module's source, compiled once to prove it is valid Python."""
    params = ", ".join(a.param for a in plan.arguments)
    source = load_template("kernel.py.j2").render(
        title=f"{plan.kernel_name}: {plan.kind} kernel" + (f" fusing {', '.join(plan.aten_ops)}" if plan.aten_ops else ""),
        target=plan.target,
        graph_name=plan.graph_name,
        inductor_name=plan.inductor_name,
        kind=plan.kind,
        aten_ops=", ".join(plan.aten_ops),
        source_lines=list(plan.source_lines),
        torch_version=plan.torch_version,
        triton_version=plan.triton_version,
        device=plan.device,
        command=plan.command,
        module_path=plan.module_path,
        names=[f"{new} <- {old}" + (f"  [{node}]" if node else "") for new, old, node in plan.renamed],
        notes=list(plan.notes),
        extra_imports=list(plan.imports),
        shim=SHIM_SOURCE.strip() if plan.needs_shim else "",
        timing=timing_source(),
        kernel_code=plan.kernel_code,
        config_origin=plan.config_origin,
        config=pprint.pformat(dict(plan.config), sort_dicts=False, width=100),
        launch_params=params,
        kernel_name=plan.kernel_name,
        grid=grid_text(plan.grid),
        kernel_args=params,
        input_lines=[argument_line(a) for a in plan.arguments],
        storage_lines=[storage_line(s) for s in plan.storages],
        outputs=repr(list(plan.outputs)),
        record_path=repr(plan.record_path),
        record_device=repr(plan.record_device),
        kernel_sha=plan.kernel_sha256,
        exact_possible=repr(plan.exact_possible),
        arguments_origin=plan.arguments_origin,
        reference_code=plan.reference_code,
        reference_params=repr(list(plan.reference_params)),
        unchecked=pprint.pformat(dict(plan.unchecked), sort_dicts=True, width=100),
        split_outputs=plan.split_outputs,
    )
    compile(source, plan.module_path, "exec")
    return source
