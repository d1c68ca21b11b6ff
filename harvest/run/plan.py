"""Which kernel modules of an extraction `harvest run --with` puts in place of Inductor's kernels, and how.

Pure: the manifest (as JSON data), the modules' texts and the raw wrappers' texts in, `Swap`s out, or a
`SwapError` that says in one line why an edit cannot replace its kernel. A module is edited when its text differs
from the sha256 the manifest holds for it (a CONFIG edit counts); `-k` names modules to swap whether edited or not.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harvest.capture.swap import kernel_text, source_sha
from harvest.errors import SwapError
from harvest.module.file import ModuleFileError, read_module_file
from harvest.writer import sha256


@dataclass(frozen=True)
class Swap:
    graph: str  # "g0_forward"
    graph_index: int  # the capture's graph number: the same graph of the new run
    kernel: str  # Inductor's kernel name in that graph
    module: str  # the module's path in the extraction
    edited: bool  # its text differs from what harvest wrote
    source_sha: str  # of the kernel source Inductor wrote when it was extracted: the new run's must be the same
    params: tuple[tuple[str, str | None], ...]  # Inductor's launch parameter -> the module's (None: fixed in its body)
    module_kernel: str = ""  # the module's @triton.jit function: what the profiler calls the edited kernel

    def to_json(self, module_path: str) -> dict:
        """The child's spec of this swap (module_path: where the child imports the module from)."""
        return {"graph": self.graph_index, "kernel": self.kernel, "module": module_path, "source_sha": self.source_sha,
                "params": [list(p) for p in self.params], "module_kernel": self.module_kernel}


def plan_swaps(manifest: Mapping, graph_indices: Mapping[str, int], modules: Mapping[str, str],
               wrappers: Mapping[str, str], names: Sequence[str] = ()) -> tuple[Swap, ...]:
    """The swaps of an extraction. graph_indices: graph name -> capture graph index (raw/capture.json); modules:
    module path -> its text now; wrappers: graph name -> raw/<graph>/output_code.py's text; names: `-k` patterns
    (a module's name, its path, or Inductor's kernel name; globs allowed), or none for every edited module."""
    found: list[Swap] = []
    matched: set[str] = set()
    for graph in manifest.get("graphs", []):
        for kernel in graph.get("kernels", []):
            path = kernel.get("module")
            if not path or path not in modules:
                continue
            text = modules[path]
            edited = sha256(text) != kernel.get("sha256")
            labels = (kernel.get("display_name", ""), path, path.rsplit("/", 1)[-1].removesuffix(".py"), kernel["name"])
            hits = [n for n in names if any(fnmatch.fnmatchcase(label, n) for label in labels)]
            matched.update(hits)
            if not (hits if names else edited):
                continue
            found.append(_swap(graph["name"], kernel, path, text, edited, graph_indices, wrappers))
    missing = [n for n in names if n not in matched]
    if missing:
        raise SwapError(f"no kernel module matches -k {missing[0]!r} in this extraction (a module's name such as "
                        "softmax_kernel, its path, or Inductor's kernel name)")
    if not found:
        raise SwapError("no kernel module of this extraction is edited (each is as harvest wrote it): edit a kernel or its "
                        "CONFIG, or name the modules to run with -k")
    return tuple(found)


def _swap(graph: str, kernel: Mapping, path: str, text: str, edited: bool, graph_indices: Mapping[str, int],
          wrappers: Mapping[str, str]) -> Swap:
    params = kernel.get("launch_params")
    if params is None:
        raise SwapError(f"{path}: the manifest does not say how Inductor's launch maps to this module (an extraction "
                        "by an older harvest): run `harvest extract` on its target again")
    try:
        module = read_module_file(text, path)
    except ModuleFileError as exc:
        raise SwapError(f"{path}: {exc.detail}; fix the module (or re-extract it) before running it") from exc
    mine = {m for _, m in params if m is not None}
    for param in module.runtime_params:
        if param not in mine:
            raise SwapError(f"{path}: launch parameter {param} is none of Inductor's launch arguments for "
                            f"{kernel['name']} (they map to {', '.join(sorted(mine)) or 'nothing'}): keep the parameters "
                            "harvest wrote, or give the new one a value inside the kernel")
    source = kernel_text(wrappers.get(graph, ""), kernel["name"])
    if graph not in graph_indices or not source:
        raise SwapError(f"{path}: raw/{graph}/output_code.py does not define {kernel['name']} (the extraction's raw/ is "
                        "incomplete): run `harvest extract` on its target again")
    dropped = tuple((inductor, m if m in module.runtime_params else None) for inductor, m in params)
    return Swap(graph, graph_indices[graph], kernel["name"], path, edited, source_sha(source), dropped, module.name)
