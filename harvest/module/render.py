"""Render one standalone kernel module from its plan: kernel, launcher, make_inputs, eager reference, a checking __main__.

Pure: `render(plan) -> str`. Every decision is in the plan (harvest.module.plan); this only writes it out through
templates/kernel.py.j2. The module reads like Triton's tutorial 01 and imports only torch, triton and the extraction's
harness.py, which carries harvest's own versions of the Inductor helpers the kernels call (harvest/inductor_helpers.py).
"""

from __future__ import annotations

import functools
import pprint
import re
import textwrap
from pathlib import Path

from harvest.helper_blocks import captured_torch, helpers_called, helpers_libdevice, helpers_source
from harvest.interpret_shim import shim_source
from harvest.module.plan import Grid, ModulePlan
from harvest.resources import load_template


@functools.lru_cache(maxsize=1)
def timing_source() -> str:
    """The marked timing section of harvest/bench/timing.py, pasted into every module: its --bench times with the same
    lines as `harvest bench` (read as text: importing harvest.bench.timing would import torch here)."""
    text = (Path(__file__).resolve().parent.parent / "bench" / "timing.py").read_text(encoding="utf-8")
    return text[text.index("# >>> timing") : text.index("# <<< timing") + len("# <<< timing")]


def scalar_text(value) -> str:
    """A scalar as Python source: repr, but inf and nan as float("inf") / float("nan"), which a module can run."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return f'float("{value}")'
    return repr(value)


def argument_lines(plan: ModulePlan) -> list[str]:
    """ARGUMENTS' entries: `"x": Tensor(shape, stride, dtype[, offset=, base=, zeros=, high=]),` or `"n": value,`.

    `base` names the first argument on the same storage; `high` goes on the view made-up values are drawn as."""
    first_view: dict[int, str] = {}
    lines = []
    for arg in plan.arguments:
        if not arg.is_tensor:
            lines.append(f'"{arg.param}": {scalar_text(arg.value)},' + (f"  # {arg.note}" if arg.note else ""))
            continue
        storage = plan.storages[arg.storage]
        extra = [f"offset={arg.offset}"] if arg.offset else []
        if arg.storage in first_view:
            extra.append(f'base="{first_view[arg.storage]}"')
        else:
            first_view[arg.storage] = arg.param
        if arg.param in plan.written_only:
            extra.append("zeros=True")
        elif storage.high is not None and storage.views and arg.param == next(v for v in storage.views if v not in plan.written_only):
            extra.append(f"high={storage.high}")
        fields = [repr(tuple(arg.shape)), repr(tuple(arg.stride)), arg.dtype, *extra]
        lines.append(f'"{arg.param}": Tensor({", ".join(fields)}),')
    return lines


def comment_lines(items: list[str], width: int = 116) -> list[str]:
    """Items packed into comment lines of at most `width` characters (after the `#     ` they are written under)."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + 2 + len(item) <= width:
            lines[-1] += ", " + item
        else:
            lines.append(item)
    return lines


def grid_text(grid: Grid) -> str:
    """The grid expression launch() computes (or the recorded grid, as it is)."""
    if grid.recorded is not None:
        return repr(grid.recorded)
    if grid.tiles:
        return f"({grid.tiles}, {grid.batch}, 1)"
    sizes = [a.size if a.block is None else f'triton.cdiv({a.size}, config["{a.block}"])' for a in grid.axes]
    return "(" + ", ".join(sizes) + ",)"


def _title(plan: ModulePlan) -> str:
    if plan.kind == "user":
        return f"{plan.kernel_name}: a user-written Triton kernel, as written, launched inside the compiled graph"
    return f"{plan.kernel_name}: {plan.kind} kernel" + (f" fusing {', '.join(plan.aten_ops)}" if plan.aten_ops else "")


# The plan's fields the template shows as they are.
AS_PLANNED = ("target", "graph_name", "inductor_name", "torch_version", "triton_version", "device", "command",
              "module_path", "kernel_code", "config_origin", "kernel_name", "arguments_origin", "reference_code")


def render(plan: ModulePlan) -> str:
    """The module's source, compiled once to prove it is valid Python."""
    params = ", ".join(a.param for a in plan.arguments)
    names = [f"{new} <- {old}" + (f" [{node}]" if node else "") for new, old, node in plan.renamed]
    source = load_template("kernel.py.j2").render(
        **{field: getattr(plan, field) for field in AS_PLANNED},
        title=_title(plan),
        source_lines=list(plan.source_lines),
        names=comment_lines(names),
        notes=[line for note in plan.notes for line in textwrap.wrap(note, 110, subsequent_indent="  ")],
        extra_imports=list(plan.imports),
        harness_imports=list(plan.harness_imports),
        config=pprint.pformat(dict(plan.config), sort_dicts=False, width=100),
        launch_params=params,
        grid=grid_text(plan.grid),
        kernel_args=params + "".join(f", {option}" for option in plan.launch_options),
        workspaces=list(plan.workspaces),
        input_lines=argument_lines(plan),
        outputs=repr(list(plan.outputs)),
        record_path=repr(plan.record_path),
        record_device=repr(plan.record_device),
        record_config=repr(dict(plan.config)) if plan.record_path else "None",
        kernel_sha=plan.kernel_sha256,
        exact_possible=repr(plan.exact_possible),
        unchecked=pprint.pformat(dict(plan.unchecked), sort_dicts=True, width=100),
        matmul=", ".join(f"{k}={v}" for k, v in plan.matmul) + f", dtype={plan.matmul_dtype}" if plan.matmul else "",
    )
    compile(source, plan.module_path, "exec")
    return source


# libdevice functions torch's triton_helpers call themselves (exp for its exp helper, isinf/isnan in frexp): for a
# module that still imports torch's (a helper harvest has no version of)
HELPERS_LIBDEVICE = frozenset({"exp", "isinf", "isnan"})
HARNESS_PATH = "harness.py"
_HARNESS_HELPERS = re.compile(r"^from harness import [^#\n]*\btriton_helpers\b", re.M)
_HARNESS_RAND = re.compile(r"^from harness import [^#\n]*\btriton_randn?\b", re.M)


def kernel_region(module_source: str) -> str:
    """The text between a module's `# >>> kernel` and `# <<< kernel` lines."""
    start = module_source.index("# >>> kernel")
    return module_source[module_source.index("\n", start) + 1 : module_source.index("# <<< kernel")]


def harness_helpers(module_sources) -> set[str]:
    """The Inductor helpers the kernels of these modules call from the harness (`triton_helpers.NAME`)."""
    return {name for source in module_sources if _HARNESS_HELPERS.search(source) for name in helpers_called(kernel_region(source))}


def libdevice_calls(module_sources) -> set[str]:
    """The libdevice functions the kernels of these modules call (directly, or through the triton_helpers they use)."""
    called: set[str] = set()
    for source in module_sources:
        region = kernel_region(source)
        called.update(re.findall(r"\blibdevice\.(\w+)\(", region))
        if re.search(r"\btl\.dot\(", region):
            called.add("dot")
        if re.search(r"\btl\.reduce\(|\btriton_helpers\.", region):
            called.add("reduce")
        if re.search(r"\bx_grid_barrier\(", region):
            called.add("grid_barrier")
        if "triton_helpers." in region:
            called.update(helpers_libdevice(helpers_called(region)) if _HARNESS_HELPERS.search(source) else HELPERS_LIBDEVICE)
    return called


def harness_source(module_sources) -> str:
    """harness.py for an extraction of these modules: the Inductor helpers their kernels call, as Inductor of the
    torch they were captured with defines them, and an interpreter shim with the libdevice functions they call (on
    triton <= 3.3 the helpers need the shim's int1 fix as well)."""
    sources = list(module_sources)
    called, helpers = libdevice_calls(sources), harness_helpers(sources)
    torch_version = next((v for v in map(captured_torch, sources) if v), None)  # one capture: one torch
    source = load_template("harness.py.j2").render(
        timing=timing_source(),
        shim=shim_source(called).strip() if called or helpers else "",
        helpers=helpers_source(helpers, torch_version).strip() if helpers else "",
        helpers_libdevice=bool(helpers_libdevice(helpers)),
        rand=any(_HARNESS_RAND.search(s) for s in sources),
    )
    compile(source, HARNESS_PATH, "exec")
    return source
