"""Child side of record-on-run: every Triton kernel launch Inductor makes, as it happens.

Wraps `CachingAutotuner.run` (the one entry point of every Inductor Triton launch, forward and backward, in every
graph; its steady-state fast path lives inside run(), so wrapping run sees every launch). For each launch it writes a
`launch` event: the kernel, the graph whose call() launched it, every argument (tensors: shape, stride, storage
offset, dtype, device and the storage they share; scalars: their values), the config that ran and the grid.
Identical launches are counted, not repeated.

The first launch of each kernel in each graph also has its data saved: the bytes of every storage its tensor
arguments view, before the launch and (where the kernel wrote them) after it, in
`RECORD_DIR/<graph index>/<kernel>.pt` (plain uint8 tensors: `torch.load(..., weights_only=True)` reads them). A cap
per kernel and per run keeps this bounded: over it only layouts and checksums are recorded, and the event says so.
The autotuner's own benchmark launches (`benchmark_run=True`) are not the run's and are skipped.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from harvest.capture.swap import source_sha
from harvest.writer import write_through

MIB = 1 << 20


class LaunchRecorder:
    def __init__(self, log: Any, record_dir: Path | None, kernel_cap: int, total_cap: int, layouts_only: bool):
        self.log = log  # bootstrap.EventLog
        self.record_dir = record_dir
        self.kernel_cap = kernel_cap
        self.total_cap = total_cap
        self.layouts_only = layouts_only or record_dir is None
        self.saved_bytes = 0
        self.graph_stack: list[int] = []  # graphs whose call() is running (nested calls: partitions, compiled autograd)
        self.seen: dict[tuple[int, str], dict] = {}  # (graph, kernel) -> its launch event (first launch)
        self.signatures: dict[tuple[int, str], dict[str, int]] = {}  # (graph, kernel) -> launch signature -> count
        self.graph_of_tuner: dict[int, int] = {}
        self.local = threading.local()
        self.swaps: Any = None  # harvest.capture.swap.KernelSwaps: `harvest run --with`'s edited kernels
        self.outputs_dir: Path | None = None  # where each graph's first call saves its outputs (`harvest run`)
        self.outputs_saved: set[int] = set()
        self.keep_inputs = False  # `harvest run`'s timing on a GPU: keep each graph's first call and its inputs
        self.graph_calls: list[tuple[int, Any, list]] = []  # (graph, its call, a copy of its first call's inputs)
        self.timing = False  # while ab_timing runs: launches are neither recorded nor counted
        self.params_of: dict[tuple[int, str], list[str]] = {}
        self.host_times: dict | None = None  # ab_timing's: (graph, kernel, swapped) -> host seconds per launch
        self.cuda_graphs: set[int] = set()  # graphs the target's run captured into CUDA graphs (reduce-overhead)
        # graph -> (its wrapper's Runner, the partition functions Inductor wrote) where the wrapper splits its call()
        # into partitions (torch >= 2.9, graph_partition): CUDA graph trees capture those, not call()
        self.partitions: dict[int, tuple[Any, list]] = {}

    # -- which graph launched a kernel --------------------------------------------------------------------------

    def wrap_call(self, module: Any, graph_index: int) -> None:
        """Make the loaded wrapper module's call() say which graph is running while it runs."""
        original = getattr(module, "call", None)
        if original is None or getattr(original, "_harvest_graph", None) is not None:
            return
        recorder = self

        def call(*args, **kwargs):
            recorder.keep_first_inputs(graph_index, call, args)
            recorder.note_cuda_graph(graph_index)
            recorder.graph_stack.append(graph_index)
            try:
                result = original(*args, **kwargs)
            finally:
                recorder.graph_stack.pop()
            recorder.save_outputs(graph_index, result)
            return result

        call._harvest_graph = graph_index  # type: ignore[attr-defined]
        module.call = call
        runner = getattr(module, "runner", None)
        if isinstance(getattr(runner, "partitions", None), list):
            self.partitions[graph_index] = (runner, list(runner.partitions))

    def note_cuda_graph(self, graph: int) -> None:
        """Whether this call of the graph, or this launch of one of its kernels, is being captured into a CUDA graph
        (mode="reduce-overhead": Inductor's CUDA graph trees record the call, or each partition of it, once, then
        replay it without Python): said once per graph."""
        if graph in self.cuda_graphs or self.timing:
            return
        import torch

        if torch.cuda.is_initialized() and torch.cuda.is_current_stream_capturing():
            self.cuda_graphs.add(graph)
            self.log.write({"event": "cuda_graph", "graph": graph})

    def keep_first_inputs(self, graph: int, call: Any, args: tuple) -> None:
        """A copy of the inputs of a graph's first call (Inductor's call(args) empties the list it is given)."""
        if not self.keep_inputs or self.timing or self.log.forked() or any(g == graph for g, _, _ in self.graph_calls):
            return
        if len(args) != 1 or not isinstance(args[0], list):
            return
        from harvest.capture.ab_timing import fresh_inputs

        self.graph_calls.append((graph, call, fresh_inputs(args[0])))

    def save_outputs(self, graph: int, result: Any) -> None:
        """The tensors a graph's first call returned, as plain tensors on the CPU: what `harvest run` compares
        between the run with Inductor's kernels and the run with the edited ones."""
        if self.outputs_dir is None or graph in self.outputs_saved or self.log.forked():
            return
        import torch

        self.outputs_saved.add(graph)
        values = result if isinstance(result, (list, tuple)) else [result]
        saved = [v.detach().to("cpu", copy=True) if isinstance(v, torch.Tensor) else None for v in values]
        write_through(self.outputs_dir / f"{graph}.pt", lambda path: torch.save(saved, path))

    def graph_of(self, tuner: Any, name: str, source: str) -> int:
        if self.graph_stack:
            return self.graph_stack[-1]
        # Launched outside a wrapped call() (a torch version where the hook did not take): the newest graph that
        # defines this kernel with this source.
        key = id(tuner)
        if key not in self.graph_of_tuner:
            self.graph_of_tuner[key] = self.log.graph_defining(name, source)
        return self.graph_of_tuner[key]

    # -- the launch hook ------------------------------------------------------------------------------------------

    def install(self) -> None:
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner

        original_run = CachingAutotuner.run
        recorder = self

        def run(tuner, *args, **kwargs):
            if kwargs.get("benchmark_run") or getattr(recorder.local, "busy", False):
                return original_run(tuner, *args, **kwargs)
            recorder.local.busy = True
            try:
                return recorder.launch(original_run, tuner, args, kwargs)
            finally:
                recorder.local.busy = False

        CachingAutotuner.run = run  # type: ignore[method-assign]

    def launch(self, original_run, tuner, args: tuple, kwargs: dict):
        import torch

        if getattr(self.log, "forked", lambda: False)():  # a process the target forked records nothing (see EventLog)
            return original_run(tuner, *args, **kwargs)

        name = (getattr(tuner, "inductor_meta", None) or {}).get("kernel_name") or getattr(tuner.fn, "__name__", "?")
        source = getattr(tuner.fn, "src", "") or ""
        graph = self.graph_of(tuner, name, source)
        if self.timing:  # harvest.capture.ab_timing: the swap (when on) or Inductor's kernel, nothing recorded
            return self.timed_launch(original_run, tuner, graph, name, args, kwargs)
        if graph in self.partitions and graph not in self.cuda_graphs:  # a partition's launches may be captured
            self.note_cuda_graph(graph)
        if not source:  # the interpreter's functions keep no source: read the kernel from its graph's code
            source = self.log.kernel_source(graph, name)
        key = (graph, name)
        params = _param_names(tuner, len(args))
        swapped = self.swaps.runner(graph, name, params, args, kwargs.get("stream")) if self.swaps is not None else None
        run_kernel = swapped or (lambda: original_run(tuner, *args, **kwargs))
        tensors = [(p, a) for p, a in zip(params, args) if isinstance(a, torch.Tensor)]
        storages, views = _storages(tensors)
        signature = _signature(params, args, views)
        first = key not in self.seen
        counts = self.signatures.setdefault(key, {})
        counts[signature] = counts.get(signature, 0) + 1
        if not first:
            return run_kernel()

        spans = [(s["lo"], s["hi"]) for s in storages]
        # A storage the kernel only writes holds whatever the allocator left there: not data, and not the same
        # from one run to the next. Its "before" is not saved (the module starts it from zeros).
        read = read_params(source)
        read_storages = {views[p][0] for p in views if p in read or not source}
        size = sum(hi - lo for i, (lo, hi) in enumerate(spans) if i in read_storages) + sum(hi - lo for lo, hi in spans)
        data_note = ""
        if self.layouts_only:
            data_note = "layouts only (--record layouts)" if self.record_dir is not None else "layouts only"
        elif size > self.kernel_cap:
            data_note = f"data not saved: {size / MIB:.1f} MiB before+after is over the per-kernel cap of {self.kernel_cap / MIB:.0f} MiB (--record-cap)"
        elif self.saved_bytes + size > self.total_cap:
            data_note = f"data not saved: its {size / MIB:.1f} MiB would pass the extraction's cap of {self.total_cap / MIB:.0f} MiB, {self.saved_bytes / MIB:.1f} MiB already saved (--record-total-cap)"
        save = not data_note
        before = [
            _span_bytes(s["tensor"], lo, hi) if i in read_storages else None
            for i, (s, (lo, hi)) in enumerate(zip(storages, spans))
        ] if save else []

        result = run_kernel()

        written = []
        after = []
        checksums = []
        for index, (s, (lo, hi)) in enumerate(zip(storages, spans)):
            if save:
                now = _span_bytes(s["tensor"], lo, hi)
                changed = before[index] is None or not torch.equal(now, before[index])
                after.append(now if changed else None)
                written.append(changed)
            else:
                written.append(None)
                checksums.append(_checksum(s["tensor"], lo, hi))
        data = ""
        if save and self.record_dir is not None:
            path = self.record_dir / str(graph) / f"{name}.pt"
            try:
                write_through(path, lambda tmp: torch.save({"before": before, "after": after}, tmp))
            except (OSError, RuntimeError) as exc:  # disk full: the target's run must not fail for harvest's record
                data_note = f"data not saved: writing {path.name} failed ({str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}); disk full?"
            else:
                data = f"{graph}/{name}.pt"
                self.saved_bytes += sum(t.numel() for t in before + after if t is not None)

        event = {
            "event": "launch",
            "graph": graph,
            "kernel": name,
            "source_sha": source_sha(source),
            "params": list(params),
            "args": [_arg_json(p, a, views) for p, a in zip(params, args)],
            "storages": [
                {"lo": lo, "hi": hi, "device": str(s["tensor"].device.type), "written": w}
                for s, (lo, hi), w in zip(storages, spans, written)
            ],
            "checksums": checksums,
            "config": _config_json(tuner),
            "grid": _grid(tuner, params, args, kwargs),
            "data": data,
            "data_note": data_note,
        }
        self.seen[key] = event
        self.log.write(event)
        return result

    def timed_launch(self, original_run, tuner, graph: int, name: str, args: tuple, kwargs: dict):
        """A launch while ab_timing runs: a swapped kernel's host time (the module's launch() with swaps on,
        Inductor's launcher with them off) goes to host_times."""
        key = (graph, name)
        if self.swaps is None or key not in self.swaps.swaps:
            return original_run(tuner, *args, **kwargs)
        if key not in self.params_of:
            self.params_of[key] = _param_names(tuner, len(args))
        began = time.perf_counter()
        swapped = self.swaps.runner(graph, name, self.params_of[key], args, kwargs.get("stream"))
        result = swapped() if swapped is not None else original_run(tuner, *args, **kwargs)
        if self.host_times is not None:
            self.host_times.setdefault((graph, name, swapped is not None), []).append(time.perf_counter() - began)
        return result

    def write_counts(self) -> None:
        """How often each recorded kernel ran, and with how many distinct argument layouts/values."""
        for (graph, name), counts in sorted(self.signatures.items()):
            self.log.write({
                "event": "launch_counts", "graph": graph, "kernel": name,
                "launches": sum(counts.values()), "distinct": len(counts),
            })


# -- helpers (pure functions of tensors and the autotuner) --------------------------------------------------------


def _param_names(tuner: Any, count: int) -> list[str]:
    """Names of the positional arguments run() gets: the signature less the config's block sizes, then extra
    launcher args (Inductor passes everything else, compile-time constants such as `xnumel = 1` included; a
    user-written kernel's launch passes none of its constexprs)."""
    triton_meta = getattr(tuner, "triton_meta", None) or {}
    signature = triton_meta.get("signature", {})
    config = _config_json(tuner)
    blocks = set(config["kwargs"]) if config else set()
    if getattr(tuner, "custom_kernel", False):  # a user's kernel: its constexprs are compile-time constants, not passed
        blocks |= {str(p) for p, kind in signature.items() if kind == "constexpr"}
    names = [str(p) for p in signature if str(p) not in blocks]
    names += list((getattr(tuner, "inductor_meta", None) or {}).get("extra_launcher_args", ()))
    if len(names) < count:
        names += [f"arg{i}" for i in range(len(names), count)]
    return names[:count]


def _storages(tensors: list[tuple[str, Any]]) -> tuple[list[dict], dict[str, tuple[int, dict]]]:
    """Group tensor arguments by the storage they view; each storage's byte span covers all of its views."""
    storages: list[dict] = []
    by_ptr: dict[tuple[str, int], int] = {}
    views: dict[str, tuple[int, dict]] = {}
    for param, tensor in tensors:
        storage = tensor.untyped_storage()
        ptr = (str(tensor.device), storage.data_ptr())
        item = tensor.element_size()
        lo = tensor.storage_offset() * item
        extent = 1 + sum((size - 1) * abs(step) for size, step in zip(tensor.shape, tensor.stride()) if size > 0)
        hi = lo + (extent * item if tensor.numel() > 0 else 0)
        if ptr not in by_ptr:
            by_ptr[ptr] = len(storages)
            storages.append({"tensor": tensor, "lo": lo, "hi": hi, "nbytes": storage.nbytes()})
        index = by_ptr[ptr]
        storages[index]["lo"] = min(storages[index]["lo"], lo)
        storages[index]["hi"] = max(storages[index]["hi"], hi)
        views[param] = (index, {
            "shape": list(tensor.shape), "stride": list(tensor.stride()), "offset": tensor.storage_offset(),
            "dtype": str(tensor.dtype).replace("torch.", ""),
        })
    return storages, views


def read_params(source: str) -> set[str]:
    """Parameters the kernel source may read: the pointer at the head of each tl.load / atomic's first argument,
    through the names a template builds its pointers with (harvest.kernel_facts' pointer_aliases), and (to be
    safe) every base of a block pointer or tensor descriptor."""
    import re

    from harvest.kernel_facts import kernel_facts

    bases = r"(?:make_block_ptr|make_tensor_descriptor)\(\s*(?:base=)?(\w+)"
    try:
        functions = kernel_facts(source).functions
    except SyntaxError:  # (a source that does not parse: every name loaded from, and the names it was assigned)
        read = set(re.findall(r"(?:tl\.load|tl\.atomic_\w+)\(\s*(\w+)", source)) | set(re.findall(bases, source))
        aliases = dict(re.findall(r"^\s*(\w+) = (\w+)\s*$", source, re.M))
        return read | {aliases[name] for name in read if name in aliases}
    read = set(re.findall(bases, source))
    for function in functions:
        aliases = function.pointer_aliases()
        read |= {aliases.get(a.pointer, a.pointer) for a in function.accesses if a.kind != "store" and a.pointer}
    return read


def _span_bytes(tensor: Any, lo: int, hi: int):
    """The bytes [lo, hi) of the tensor's storage, copied to the CPU."""
    import torch

    flat = torch.empty(0, dtype=torch.uint8, device=tensor.device)
    flat.set_(tensor.untyped_storage(), lo, (hi - lo,), (1,))
    return flat.to("cpu", copy=True)


def _checksum(tensor: Any, lo: int, hi: int) -> int:
    """A cheap checksum of a storage span whose data was not saved (the sum of its bytes, after the launch): enough
    to tell two runs apart, kept in capture.json."""
    import torch

    flat = torch.empty(0, dtype=torch.uint8, device=tensor.device)
    flat.set_(tensor.untyped_storage(), lo, (hi - lo,), (1,))
    return int(flat.sum(dtype=torch.int64).item())


def _arg_json(param: str, value: Any, views: dict[str, tuple[int, dict]]) -> dict:
    if param in views:
        storage, view = views[param]
        return {"param": param, "tensor": {"storage": storage, **view}}
    if isinstance(value, bool):
        return {"param": param, "value": value}
    if isinstance(value, (int, float)):
        return {"param": param, "value": value}
    return {"param": param, "value": None, "type": type(value).__name__}


def _signature(params: list[str], args: tuple, views: dict[str, tuple[int, dict]]) -> str:
    parts = []
    for param, value in zip(params, args):
        if param in views:
            storage, view = views[param]
            parts.append(f"{storage}:{view['shape']}:{view['stride']}:{view['offset']}:{view['dtype']}")
        else:
            parts.append(repr(value) if isinstance(value, (int, float, bool)) else type(value).__name__)
    return "|".join(parts)


def _config_json(tuner: Any) -> dict | None:
    launchers = getattr(tuner, "launchers", None) or []
    if getattr(tuner, "triton_interpret", False) and getattr(tuner, "configs", None):
        config, chosen_by = tuner.configs[0], "interpreter (runs the first config)"
    elif len(launchers) == 1:
        config, chosen_by = launchers[0].config, "autotune" if len(getattr(tuner, "configs", ()) or ()) > 1 else "the only config"
    else:
        return None
    return {
        "kwargs": {k: v for k, v in config.kwargs.items() if isinstance(v, (int, bool))},
        "num_warps": int(config.num_warps),
        "num_stages": int(config.num_stages),
        "chosen_by": chosen_by,
    }


def _grid(tuner: Any, params: list[str], args: tuple, kwargs: dict) -> list[int] | None:
    """The grid the launch ran with, computed the way Inductor's launcher computes it (None when unknown)."""
    grid = kwargs.get("grid")  # torch <= 2.6 passes it
    try:
        if grid is not None:
            if callable(grid):
                config = _config_json(tuner)
                grid = grid(dict(config["kwargs"]) if config else {})
            return [int(g) for g in grid] + [1] * (3 - len(grid))
        from torch._inductor.runtime.triton_heuristics import GridExpr

        meta = getattr(tuner, "inductor_meta", None) or {}
        config = _config_json(tuner)
        if "grid_type" not in meta or config is None:
            return None
        expr = GridExpr.from_meta(meta, dict(config["kwargs"]))
        values = {p: a for p, a in zip(params, args) if isinstance(a, (int, float))}
        return [int(g) for g in expr.eval_slow(values)]
    except Exception:  # a grid we cannot evaluate is only information: the module computes its own
        return None

