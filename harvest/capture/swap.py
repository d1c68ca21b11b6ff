"""Child side of `harvest run --with`: launch an edited kernel module in place of the Inductor kernel it came from.

The parent (harvest.run) writes the swaps as JSON: for each, the graph index and Inductor kernel name it replaces,
the sha of the kernel source Inductor wrote when the module was extracted, the module's path, and how Inductor's
launch parameters map to the module's launch() parameters. At a launch of that kernel in that graph the recorder
asks `KernelSwaps.runner`: when Inductor's kernel source is still the one extracted, the module's own launch()
runs instead (with its CONFIG, on Inductor's arguments), once per launch; when it is not, the run stops (the edit was
made for another kernel). Modules are imported here: they are the user's own files of an extraction this machine
made by running the target, which is what `harvest run` was asked to run.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import operator
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harvest.capture.launch_shape import grid_inputs
from harvest.capture.launcher import DirectLaunch, direct_launch_unavailable
from harvest.imports import import_file


class SwapRefused(RuntimeError):
    """A swap that cannot be made: the run stops here, and the parent says why in one line."""


class KernelSwaps:
    def __init__(self, spec_path: Path, log: Any) -> None:
        self.log = log  # bootstrap.EventLog
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        self.swaps = {(int(s["graph"]), str(s["kernel"])): s for s in spec}
        self.modules: dict[str, Any] = {}
        # (graph, kernel) -> (Inductor's launch parameters, the module's launch(), which of their values launch() takes
        # in its order, the DirectLaunch of the module's kernel or None)
        # (graph, kernel) -> (Inductor's launch parameters, what launches the module's kernel on Inductor's arguments)
        self.bound: dict[tuple[int, str], tuple[list[str], SwappedKernel]] = {}
        self.unavailable: dict[str, str] = {}  # module path -> why its kernel is launched through Triton's JIT
        self.direct: dict[str, DirectLaunch] = {}  # module path -> what launches its kernel, where it is direct
        self.enabled = True  # off: Inductor's own kernels run (the timing's A side, harvest.capture.ab_timing)

    def kernel_names(self) -> dict[tuple[int, str], str]:
        """(graph, Inductor's kernel) -> the name of the module's kernel that runs in its place."""
        return {key: str(s.get("module_kernel") or key[1]) for key, s in sorted(self.swaps.items())}

    def runner(self, graph: int, name: str, params: list[str], args: tuple, stream: Any = None
               ) -> Callable[[], Any] | None:
        """What to run for this launch instead of Inductor's kernel, or None when it is not swapped (`stream`: the
        one Inductor's wrapper passed for the launch, which a directly launched kernel takes)."""
        swap = self.swaps.get((graph, name)) if self.enabled else None
        if swap is None:
            return None
        key = (graph, name)
        bound = self.bound.get(key)
        if bound is None or (bound[0] is not params and bound[0] != params):
            bound = self.bound[key] = (params, self._bind(graph, name, swap, params))
        swapped = bound[1]
        if swapped.direct is not None:
            swapped.direct.given_stream = stream
        return functools.partial(swapped, args)

    def _bind(self, graph: int, name: str, swap: dict, params: list[str]) -> SwappedKernel:
        """Once per swapped kernel (and launch parameter list): the source check, the module imported, and which of
        Inductor's launch arguments the module's launch() takes, in its order."""
        if source_sha(self.log.kernel_source(graph, name)) != swap["source_sha"]:
            self.log.write({"event": "swap_refused", "graph": graph, "kernel": name, "module": swap["module"],
                            "reason": "Inductor now writes another kernel there (its source differs from the one extracted)"})
            raise SwapRefused(f"{swap['module']}: Inductor's {name} is no longer the kernel it was extracted from")
        module = self._module(swap)
        where: dict[str, int] = {}
        for inductor, mine in swap["params"]:
            if mine is None:
                continue
            if inductor not in params:
                self.log.write({"event": "swap_refused", "graph": graph, "kernel": name, "module": swap["module"],
                                "reason": f"Inductor's launch has no argument {inductor} for the module's {mine}"})
                raise SwapRefused(f"{swap['module']}: no argument {inductor} in Inductor's launch")
            where[mine] = params.index(inductor)
        # launch()'s parameters in its own order (those after them keep their defaults: config=CONFIG)
        signature = inspect.signature(module.launch)
        mine_in_order = list(signature.parameters)[: len(where)]
        if sorted(mine_in_order) != sorted(where):
            raise SwapRefused(f"{swap['module']}: launch() does not take {', '.join(sorted(where))} first")
        direct = self.direct.get(swap["module"])
        grid_reads = None
        if direct is not None and list(signature.parameters) == [*mine_in_order, "config"]:
            try:
                grid_reads = grid_inputs(textwrap.dedent(inspect.getsource(module.launch)), str(swap.get("module_kernel")))
            except (OSError, TypeError):  # no source to read: launch() is called at every launch
                grid_reads = None
        config = signature.parameters["config"].default if grid_reads is not None else None

        def launched(error: str = "") -> None:
            if error:
                self.log.write({"event": "swap_failed", "graph": graph, "kernel": name, "module": swap["module"],
                                "error": error})
            else:
                self.log.write({"event": "swapped", "graph": graph, "kernel": name, "module": swap["module"],
                                "launch": self.launch_path(swap)})

        return SwappedKernel(swap["module"], module.launch, [where[mine] for mine in mine_in_order], direct, launched,
                             None if grid_reads is None else tuple(mine_in_order.index(p) for p in grid_reads), config)

    def fell_back(self, path: str, why: str) -> None:
        """A module whose direct launch was given up mid-run: the run's launch line says so (the last word wins)."""
        self.unavailable[path] = why
        self.log.write({"event": "swapped", "module": path, "graph": None, "kernel": None, "launch": f"jit: {why}"})

    def static_refused(self, path: str, why: str) -> None:
        """A module whose kernel the static launcher refused mid-run (Triton's compiled launcher launches it now)."""
        self.log.write({"event": "swapped", "module": path, "graph": None, "kernel": None, "launch": f"direct: {why}"})

    def launch_path(self, swap: dict) -> str:
        """How the module's kernel is launched: "static" (its compiled kernel by torch's static CUDA launcher, as
        Inductor launches its own), "direct: <why not static>" (by Triton's compiled launcher) or "jit: <why>"
        (through Triton's JIT at every launch)."""
        why = self.unavailable.get(swap["module"], "")
        if why:
            return f"jit: {why}"
        direct = self.direct.get(swap["module"])
        not_static = direct.static_why if direct is not None else None
        return "static" if not_static == "" else f"direct: {not_static}" if not_static else "direct"

    def owns(self, path: str) -> bool:
        """Whether a kernel defined in `path` is one of the swapped modules' (not a user's kernel)."""
        return any(Path(path) == Path(s["module"]) for s in self.swaps.values())

    def _module(self, swap: dict) -> Any:
        path = swap["module"]
        if path not in self.modules:
            try:
                module = import_file(path, f"harvest_swap_{len(self.modules)}")
            except Exception as exc:
                message = next((line for line in str(exc).strip().splitlines() if line.strip()), type(exc).__name__)
                self.log.write({"event": "swap_failed", "module": path, "error": f"{type(exc).__name__}: {message}"})
                raise SwapRefused(f"{path}: {type(exc).__name__}: {message}") from exc
            self.modules[path] = module
            self.unavailable[path] = _launch_directly(module, str(swap.get("module_kernel") or ""),
                                                      lambda why, path=path: self.fell_back(path, why),
                                                      lambda why, path=path: self.static_refused(path, why))
            launcher = getattr(module, str(swap.get("module_kernel") or ""), None)
            if isinstance(launcher, DirectLaunch):
                self.direct[path] = launcher
        return self.modules[path]


class SwappedKernel:
    """A swapped kernel of one graph: called with Inductor's launch arguments, it launches the module's kernel on
    them. Through the module's launch() at the first launch; after it, where launch() is of the shape harvest writes
    (harvest.capture.launch_shape) and its grid read integers only, the compiled kernel is launched on the grid that
    launch() gave, for arguments of that specialization and those integers (DirectLaunch.fast checks both), and
    launch() itself is called for any others."""

    def __init__(self, module: str, launch: Callable[..., Any], order: list[int], direct: DirectLaunch | None,
                 launched: Callable[[str], None], grid_reads: tuple[int, ...] | None, config: Any) -> None:
        self.module = module  # the module's path
        self.launch = launch  # its launch()
        self.pick = (operator.itemgetter(*order) if len(order) > 1 else
                     (lambda args, i=order[0]: (args[i],)) if order else (lambda args: ()))
        self.direct = direct
        self.launched = launched  # told "" after the first launch, or the error that stopped one
        self.grid_reads = grid_reads  # the positions of launch()'s arguments its grid reads; None: not of the shape
        self.config = config
        self.grid: Any = None  # the grid launch() gave, once the compiled kernel is launched without it
        self.grid_of: Any = None  # the integers it gave it for (launch()'s arguments at grid_reads)
        self.told = False

    def __call__(self, args: tuple) -> None:
        values = self.pick(args)
        try:
            if (self.grid is not None and tuple(values[i] for i in self.grid_reads) == self.grid_of  # type: ignore[union-attr]
                    and self.direct.fast(self.grid, values, self.config)):  # type: ignore[union-attr]
                return
            self.launch(*values)
        except Exception as exc:  # the edit does not compile or does not run: Triton's own error, one line
            message = next((line for line in str(exc).strip().splitlines() if line.strip()), type(exc).__name__)
            self.launched(f"{type(exc).__name__}: {message}")
            raise SwapRefused(f"{self.module}: {type(exc).__name__}: {message}") from exc
        if not self.told:
            self.told = True
            self.launched("")
            direct = self.direct
            if direct is not None and self.grid_reads is not None and direct.fast_grid is not None:
                made_for = direct.fast_args  # launch()'s arguments, passed on in its order (launch_shape)
                if all(i < len(made_for) and type(made_for[i]) is int for i in self.grid_reads):
                    self.grid, self.grid_of = direct.fast_grid, tuple(made_for[i] for i in self.grid_reads)


def _launch_directly(module: Any, kernel: str, on_fallback: Callable[[str], None],
                     on_static_refused: Callable[[str], None]) -> str:
    """Put a DirectLaunch in place of the module's kernel, which its launch() launches: "" when done, else why not."""
    why = direct_launch_unavailable()
    if why:
        return why
    fn = getattr(module, kernel, None)
    if not (hasattr(fn, "run") and hasattr(fn, "params") and hasattr(fn, "fn")):
        return f"{kernel} is not a @triton.jit function of the module (an autotuner or another wrapper launches it)"
    setattr(module, kernel, DirectLaunch(fn, on_fallback=on_fallback, on_static_refused=on_static_refused))
    return ""


def kernel_text(wrapper: str, kernel: str) -> str:
    """The Triton source of `kernel` as the wrapper module's text defines it ("" when it defines no such kernel)."""
    start = wrapper.find(f"{kernel} = async_compile.triton(")
    if start < 0:
        return ""
    begin = wrapper.find("'''", start)
    end = wrapper.find("'''", begin + 3)
    return wrapper[begin + 3 : end] if begin >= 0 and end >= 0 else ""


def source_sha(text: str) -> str:
    """What tells two kernel sources apart: the first 16 hex digits of their sha256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
