"""Child side of a capture: install hooks, run the target script, write every Inductor module as it appears.

Run by harvest.capture.runner as `python -m harvest.capture.bootstrap CAPTURE_DIR MODE SM -- target.py args...`.
It writes, as soon as each thing happens (so a crash or a timeout loses nothing already seen):

  CAPTURE_DIR/graph_NNN.py     the wrapper module source, as Inductor produced it
  CAPTURE_DIR/events.jsonl     one JSON object a line: env, graph, artifact, launch, launch_counts, winners, exit
  RECORD_DIR/<graph>/<kernel>.pt   the data of each kernel's first launch (see harvest.capture.record)

Lines on stderr that start with "[harvest] " are progress for the parent to show.
"""

from __future__ import annotations

import json
import logging
import os
import re
import runpy
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from harvest.capture.kernel_graph import KernelGraphs
from harvest.capture.record import MIB, LaunchRecorder
from harvest.capture.swap import KernelSwaps, kernel_text
from harvest.imports import import_file
from harvest.writer import write_file

PROGRESS = "[harvest] "


class EventLog:
    def __init__(self, capture_dir: Path):
        self.dir = capture_dir
        self.path = capture_dir / "events.jsonl"
        self.graphs = 0
        self.sources: list[str] = []
        self.pending: int | None = None  # a graph whose module Inductor is about to load
        self.pid = os.getpid()

    def forked(self) -> bool:
        """True in a process the target forked: it inherits the hooks, but its graph numbers would collide with the
        target's own, so it records nothing (a process the target spawns has no hooks at all)."""
        return os.getpid() != self.pid

    def write(self, event: dict) -> None:
        if self.forked():
            return
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(event, sort_keys=True) + "\n")

    def graph(self, source: str, compile_id: str) -> None:
        if self.forked():
            progress(f"a process the target forked (pid {os.getpid()}) compiled a graph: not captured (harvest captures the target's own process)")
            return
        index = self.graphs
        self.graphs += 1
        write_file(self.dir / f"graph_{index:03d}.py", source)  # whole: harvest's prewarm reads it meanwhile
        self.sources.append(source)
        self.pending = index
        aot_id = ""
        first = source.split("\n", 1)[0]
        if first.startswith("# AOT ID: ['") and first.endswith("']"):
            aot_id = first[len("# AOT ID: ['") : -2]
        self.write({"event": "graph", "index": index, "aot_id": aot_id, "compile_id": compile_id})
        kernels = source.count("async_compile.triton(")
        progress(f"captured graph {index} ({aot_id or 'unknown'}, compile {compile_id or '?'}): {kernels} Triton kernels")


    def graph_defining(self, kernel: str, kernel_source: str) -> int:
        """The newest graph that defines `kernel` with this source (-1 when none does)."""
        for index in range(len(self.sources) - 1, -1, -1):
            text = self.sources[index]
            if f"{kernel} = async_compile.triton(" in text and kernel_source.strip() in text:
                return index
        return -1


    def kernel_source(self, graph: int, kernel: str) -> str:
        """The Triton source of `kernel` as graph `graph` defines it ("" when unknown)."""
        return kernel_text(self.sources[graph], kernel) if 0 <= graph < len(self.sources) else ""


def progress(message: str) -> None:
    rank = os.environ.get("RANK") if os.environ.get("HARVEST_RANKED") else None  # one of torchrun's ranks: say which
    print(PROGRESS + (f"rank {rank}: " if rank is not None else "") + message, file=sys.stderr, flush=True)


def current_compile_id() -> str:
    import torch

    trace_id = torch._guards.CompileContext.current_trace_id()
    if trace_id is None or trace_id.compile_id is None:
        return ""
    cid = trace_id.compile_id
    text = f"{cid.frame_id}/{cid.frame_compile_id}"
    if getattr(cid, "compiled_autograd_id", None) is not None:
        text = f"!{cid.compiled_autograd_id}/" + text
    return text


class TraceArtifacts(logging.Handler):
    """Collects provenance artifacts from the structured trace log (torch.__trace)."""

    NAMES = ("inductor_provenance_tracking_node_mappings", "inductor_provenance_tracking_kernel_stack_traces")

    def __init__(self, log: EventLog):
        super().__init__(level=logging.DEBUG)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None) or {}
        artifact = metadata.get("artifact") if isinstance(metadata, dict) else None
        if not isinstance(artifact, dict) or artifact.get("name") not in self.NAMES:
            return
        payload = getattr(record, "payload", None)
        try:
            value = json.loads(payload) if payload else None
        except ValueError:
            value = None
        # Artifacts follow the graph they describe, so they belong to the last captured graph.
        self.log.write({"event": "artifact", "name": artifact["name"], "graph": self.log.graphs - 1, "value": value})


def install_hooks(log: EventLog, recorder: LaunchRecorder) -> None:
    import torch
    import torch._inductor.config as inductor_config
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.graph import GraphLowering

    inductor_config.force_disable_caches = True
    if hasattr(inductor_config, "trace") and hasattr(inductor_config.trace, "provenance_tracking_level"):
        inductor_config.trace.provenance_tracking_level = 1

    def save_output_code(code: str) -> None:
        log.graph(code, current_compile_id())

    GraphLowering.save_output_code = staticmethod(save_output_code)  # type: ignore[assignment]

    # Inductor loads the wrapper module right after saving its code: wrap its call() so that every kernel launch
    # knows which graph launched it (kernel objects, and even kernel names, can be shared between graphs).
    original_load = PyCodeCache.load_by_key_path.__func__

    def load_by_key_path(cls, *args, **kwargs):
        module = original_load(cls, *args, **kwargs)
        if log.pending is not None and hasattr(module, "call"):
            recorder.wrap_call(module, log.pending)
            log.pending = None
        return module

    PyCodeCache.load_by_key_path = classmethod(load_by_key_path)  # type: ignore[method-assign]

    # The graph each Triton kernel computes, for the eager reference: kernels are generated before their graph's
    # code is saved, so they belong to the graph that will be captured next.
    KernelGraphs(log.write, lambda: log.graphs).install()

    trace_log = logging.getLogger("torch.__trace")
    trace_log.addHandler(TraceArtifacts(log))
    trace_log.setLevel(logging.DEBUG)
    trace_log.propagate = False
    del torch


def setup_cpu_triton(sm: int, swapped: Callable[[str], bool] = lambda path: False) -> None:
    """Inductor's CPU Triton path: real Triton source, run by the interpreter, for an offline GPU target."""
    import torch._inductor.config as inductor_config
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.driver import CudaDriver
    from triton.runtime import driver

    from harvest.interpret_shim import install

    class OfflineCudaDriver(CudaDriver):
        """A driver that names a GPU target without touching a GPU."""

        def __init__(self) -> None:  # CudaDriver.__init__ loads libcuda; there is none here
            pass

        def get_current_target(self) -> GPUTarget:
            return GPUTarget("cuda", sm, 32)

        @classmethod
        def is_active(cls) -> bool:
            return True

    inductor_config.cpu_backend = "triton"
    # max-autotune's epilogue-fusion benchmark writes a module that fails to import on this path (IndentationError,
    # torch 2.13): the templates still compete with the library matmul, their epilogue fusion is not benchmarked.
    inductor_config.benchmark_epilogue_fusion = False
    # The interpreter compiles nothing, so Inductor's pool of compile processes (each one imports torch) only costs:
    # one thread made square_square's extraction 9.4 s -> 6.6 s on 2 cores (a TransformerEncoderLayer step's: the
    # same 17-18 s). A TORCHINDUCTOR_COMPILE_THREADS that is set wins.
    if "TORCHINDUCTOR_COMPILE_THREADS" not in os.environ:
        inductor_config.compile_threads = 1
    driver.set_active(OfflineCudaDriver())
    install()
    run_user_kernels_outside_graphs(swapped)


def run_user_kernels_outside_graphs(swapped: Callable[[str], bool] = lambda path: False) -> None:
    """On the CPU path a user's @triton.jit kernel is the Triton interpreter's InterpretedFunction, which Dynamo
    does not know as a Triton kernel: it traces into the interpreter and fails (a fake uint64 tensor). Kept out of
    Dynamo's reach, the kernel runs between two graphs (a graph break) and the graphs around it are captured; one
    line says so, once per kernel. On a GPU Dynamo captures it inside the graph, as it is."""
    import torch._dynamo
    from triton.runtime.interpreter import InterpretedFunction

    original_run = InterpretedFunction.run
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    told: set[str] = set()

    @torch._dynamo.disable
    def run(self, *args, **kwargs):
        where = getattr(getattr(self.fn, "__code__", None), "co_filename", "")
        name = getattr(self.fn, "__name__", "?")
        if not (cache and where.startswith(cache)) and not swapped(where) and name not in told:
            told.add(name)
            progress(f"user-written Triton kernel {name} runs between the compiled graphs on the CPU path (Dynamo cannot "
                     "trace the Triton interpreter: a graph break there); on a GPU it is captured inside the graph")
        return original_run(self, *args, **kwargs)

    InterpretedFunction.run = run


AUTOTUNERS: list = []


def track_autotuners() -> None:
    """Remember every kernel object Inductor creates, to read its autotune winner when the target ends."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    original_init = CachingAutotuner.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        AUTOTUNERS.append(self)

    CachingAutotuner.__init__ = init  # type: ignore[method-assign]


def record_winners(log: EventLog) -> None:
    """The config each kernel ran with: the autotuner's pick (block sizes, warps, stages)."""
    winners: list[dict] = []
    for tuner in AUTOTUNERS:
        name = (getattr(tuner, "inductor_meta", None) or {}).get("kernel_name") or getattr(tuner.fn, "__name__", "")
        launchers = getattr(tuner, "launchers", None) or []
        if len(launchers) == 1:
            config, chosen_by = launchers[0].config, "autotune"
        elif getattr(tuner, "triton_interpret", False) and tuner.configs:
            config, chosen_by = tuner.configs[0], "interpreter (runs the first config)"
        else:
            continue
        winners.append({
            "name": name,
            "src": getattr(tuner.fn, "src", ""),  # names repeat across graphs; the source tells them apart
            "chosen_by": chosen_by,
            "kwargs": {k: v for k, v in config.kwargs.items() if isinstance(v, int)},
            "num_warps": int(config.num_warps),
            "num_stages": int(config.num_stages),
        })
    log.write({"event": "winners", "winners": winners})


def run_artifact_graphs(directory: Path, log: EventLog, recorder: LaunchRecorder, use_cuda: bool) -> None:
    """--run-artifact: load each wrapper module of an artifact (the user asked for this explicitly) and run its
    own `call(get_args())` under the launch recorder, so that every intermediate gets its real layout."""
    import torch

    paths = sorted(directory.glob("graph_*.py"))
    sources = {int(path.stem.split("_")[1]): path.read_text(encoding="utf-8") for path in paths}
    for source in sources.values():
        if "device_str='cuda'" in source and not use_cuda:
            raise RuntimeError("the artifact was compiled for CUDA and this machine has no GPU: --run-artifact needs one (leave it out to only read the artifact)")
    log.sources = [sources.get(i, "") for i in range(max(sources, default=-1) + 1)]
    for path in paths:
        index = int(path.stem.split("_")[1])
        module = import_file(path, f"harvest_artifact_graph_{index}")
        if not hasattr(module, "get_args") or not hasattr(module, "call"):
            progress(f"graph {index}: no get_args()/call() in the artifact (torch < 2.5?): nothing to run")
            continue
        recorder.wrap_call(module, index)
        torch.manual_seed(0)  # get_args() draws random inputs: the same ones every time
        module.call(list(module.get_args()))
        progress(f"ran graph {index} of the artifact: {sum(1 for k in recorder.seen if k[0] == index)} kernels recorded")


def target_frames(tb):
    """The traceback from the target's first frame on: harvest's own and runpy's frames are not the user's."""
    while tb is not None and tb.tb_next is not None and (
        tb.tb_frame.f_code.co_filename == __file__ or "runpy" in tb.tb_frame.f_code.co_filename
    ):
        tb = tb.tb_next
    return tb


def main(argv: list[str]) -> int:
    at = argv.index("--")
    (capture_dir, mode, sm, *options), (target, *target_args) = argv[:at], argv[at + 1 :]
    settings = dict(option.split("=", 1) for option in options)
    record_dir = Path(settings["record_dir"]) if settings.get("record_dir") else None
    ranked = settings.get("ranked") == "1"  # one of torchrun's ranks: each keeps its own capture, records and caches
    if ranked:
        capture_dir, record_dir = rank_directories(Path(capture_dir), record_dir, os.environ.get("RANK", "0"))
        os.environ["HARVEST_RANKED"] = "1"
    log = EventLog(Path(capture_dir))
    recorder = LaunchRecorder(
        log,
        record_dir,
        kernel_cap=int(settings.get("kernel_cap", 1024 * MIB)),
        total_cap=int(settings.get("total_cap", 4096 * MIB)),
        layouts_only=settings.get("record", "data") == "layouts",
    )
    if settings.get("swaps"):  # `harvest run --with`: edited modules in place of Inductor's kernels
        recorder.swaps = KernelSwaps(Path(settings["swaps"]), log)
    if settings.get("outputs_dir"):
        recorder.outputs_dir = Path(settings["outputs_dir"])
    timing_out = Path(settings["timing_out"]) if settings.get("timing_out") else None  # `harvest run`'s A/B timing
    sys.argv = [target, *target_args]
    sys.path.insert(0, str(Path(target).resolve().parent))

    import warnings

    # Our own settings make torch warn; the target's warnings still show.
    warnings.filterwarnings("ignore", message=".*force_disable_caches.*")
    warnings.filterwarnings("ignore", message=".*Could not find an active CPU backend.*")

    import torch  # does not import triton, so TRITON_INTERPRET can still be decided below

    use_cuda = mode == "cuda" or (mode == "auto" and torch.cuda.is_available())
    if mode == "cuda" and not torch.cuda.is_available():
        log.write({"event": "exit", "status": "no-cuda", "code": 2, "error": "--device cuda, but torch sees no GPU"})
        return 0
    if not use_cuda and tuple(int(part) for part in re.findall(r"\d+", torch.__version__)[:2]) < (2, 6):
        error = f"torch {torch.__version__} has no Inductor CPU Triton backend (cpu_backend='triton' came in torch 2.6)"
        log.write({"event": "exit", "status": "no-cpu-triton", "code": 2, "error": error})
        return 0
    if not use_cuda:
        os.environ["TRITON_INTERPRET"] = "1"
        setup_cpu_triton(int(sm), lambda path: recorder.swaps is not None and recorder.swaps.owns(path))
    import triton

    gpu = torch.cuda.get_device_name() if use_cuda else ""
    log.write({
        "event": "env", "mode": "cuda" if use_cuda else "cpu-triton", "sm": int(sm), "gpu": gpu, "pid": os.getpid(),
        "torch": torch.__version__, "triton": triton.__version__,
    })
    progress("running on " + (f"CUDA ({gpu})" if use_cuda else f"CPU: Inductor's Triton backend, Triton interpreter, offline target sm_{sm}"))
    install_hooks(log, recorder)
    track_autotuners()
    recorder.install()
    recorder.keep_inputs = use_cuda and timing_out is not None and recorder.swaps is not None

    status, code, error = "ok", 0, ""
    ended_at = 0.0  # when the target raised (a torchrun job names the rank that failed first)
    try:
        if settings.get("artifact") == "1":
            run_artifact_graphs(Path(target), log, recorder, use_cuda)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        status = "exit"
        if exc.code is not None and not isinstance(exc.code, int):
            error = str(exc.code)
            print(error, file=sys.stderr, flush=True)  # as Python prints it: the target's log keeps it
    except BaseException as exc:  # the target's own failure: report it, keep what was captured
        status, code = "raised", 1
        ended_at = time.time()
        frames = target_frames(exc.__traceback__)
        error = "".join(traceback.format_exception(type(exc), exc, frames)[-12:])
        traceback.print_exception(type(exc), exc, frames, file=sys.stderr)  # as Python prints it, into the target's log
        sys.stderr.flush()
    if recorder.keep_inputs and timing_out is not None and code == 0 and status in ("ok", "exit"):
        progress("timing the compiled step with Inductor's kernels and with the edited ones, interleaved")
        from harvest.capture.ab_timing import write_timing

        write_timing(timing_out, recorder)
    try:
        recorder.write_counts()
        record_winners(log)
    finally:
        log.write({"event": "exit", "status": status, "code": code, "error": error, "ended_at": ended_at})
    if ranked and (status == "raised" or code):  # so torchrun ends the other ranks instead of leaving them waiting
        return code or 1
    return 0


def rank_directories(capture_dir: Path, record_dir: Path | None, rank: str) -> tuple[Path, Path | None]:
    """rank<r>/ under the capture and record directories, and Inductor and Triton caches of the rank's own (two
    ranks writing one cache directory would race)."""
    for variable in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        if os.environ.get(variable):
            os.environ[variable] = os.path.join(os.environ[variable], f"rank{rank}")
    ranked = capture_dir / f"rank{rank}"
    ranked.mkdir(parents=True, exist_ok=True)
    return ranked, (record_dir / f"rank{rank}" if record_dir is not None else None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
