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
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
        self.bound: dict[tuple[int, str], tuple[list[str], Callable[..., Any], list[int], DirectLaunch | None]] = {}
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
            bound = self.bound[key] = (params, *self._bind(graph, name, swap, params))
        _, launch, order, direct = bound
        if direct is not None:
            direct.given_stream = stream
        return functools.partial(launch, *[args[index] for index in order])

    def _bind(self, graph: int, name: str, swap: dict, params: list[str]
              ) -> tuple[Callable[..., Any], list[int], DirectLaunch | None]:
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
        mine_in_order = list(inspect.signature(module.launch).parameters)[: len(where)]
        if sorted(mine_in_order) != sorted(where):
            raise SwapRefused(f"{swap['module']}: launch() does not take {', '.join(sorted(where))} first")
        told = False

        def launch(*values: Any) -> None:
            nonlocal told
            try:
                module.launch(*values)
            except Exception as exc:  # the edit does not compile or does not run: Triton's own error, one line
                message = next((line for line in str(exc).strip().splitlines() if line.strip()), type(exc).__name__)
                self.log.write({"event": "swap_failed", "graph": graph, "kernel": name, "module": swap["module"],
                                "error": f"{type(exc).__name__}: {message}"})
                raise SwapRefused(f"{swap['module']}: {type(exc).__name__}: {message}") from exc
            if not told:
                told = True
                self.log.write({"event": "swapped", "graph": graph, "kernel": name, "module": swap["module"],
                                "launch": self.launch_path(swap)})

        return launch, [where[mine] for mine in mine_in_order], self.direct.get(swap["module"])

    def fell_back(self, path: str, why: str) -> None:
        """A module whose direct launch was given up mid-run: the run's launch line says so (the last word wins)."""
        self.unavailable[path] = why
        self.log.write({"event": "swapped", "module": path, "graph": None, "kernel": None, "launch": f"jit: {why}"})

    def launch_path(self, swap: dict) -> str:
        """How the module's kernel is launched: "direct" (its compiled kernel, as Inductor's launcher does) or
        "jit: <why>" (through Triton's JIT at every launch)."""
        why = self.unavailable.get(swap["module"], "")
        return f"jit: {why}" if why else "direct"

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
                                                      lambda why, path=path: self.fell_back(path, why))
            launcher = getattr(module, str(swap.get("module_kernel") or ""), None)
            if isinstance(launcher, DirectLaunch):
                self.direct[path] = launcher
        return self.modules[path]


def _launch_directly(module: Any, kernel: str, on_fallback: Callable[[str], None]) -> str:
    """Put a DirectLaunch in place of the module's kernel, which its launch() launches: "" when done, else why not."""
    why = direct_launch_unavailable()
    if why:
        return why
    fn = getattr(module, kernel, None)
    if not (hasattr(fn, "run") and hasattr(fn, "params") and hasattr(fn, "fn")):
        return f"{kernel} is not a @triton.jit function of the module (an autotuner or another wrapper launches it)"
    setattr(module, kernel, DirectLaunch(fn, on_fallback=on_fallback))
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
