"""A CUDA twin run on the CPU, for the tests: its .cu, the extraction's launch helpers and its launcher compiled with
g++ against tests/emulated_cuda (threads for a block's threads, barriers for __syncthreads and shuffles, a process
per block for a cooperative launch), then checked by the twin harness's own --check against the run's record and
the eager reference. The GPU is what it stands in for: every twin the tests run here is also run on the H200 by
scripts/gpu_twins.py."""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "emulated_cuda"
NVCC = shutil.which("nvcc")


def cuda_include() -> str:
    """The CUDA toolkit's include directory, as nvcc itself names it (`nvcc --dryrun`): vector_types.h, cuda_fp16.h."""
    done = subprocess.run([NVCC, "--dryrun", "-c", "-x", "cu", os.devnull], capture_output=True, text=True)
    found = re.search(r'INCLUDES="-I([^"]+)"', done.stdout + done.stderr)
    if not found:
        raise RuntimeError(f"nvcc --dryrun names no include directory:\n{done.stderr[-2000:]}")
    return found.group(1)
CTYPES = {"torch::Tensor": ctypes.c_void_p, "int64_t": ctypes.c_int64, "double": ctypes.c_double, "bool": ctypes.c_bool}


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()]


def emulated_source(cuda: str, launch_helpers: str, launcher: str, declaration: str) -> str:
    """One C++ file: the kernel, the launch helpers, the launcher with its `<<<grid, block, 0, stream>>>` made a call
    of the emulation, and an extern "C" entry with the launcher's parameters (a tensor as its data pointer)."""
    def launch_call(match: re.Match) -> str:
        grid, block = _split_top_level(match.group(2))[:2]
        return f"hv_emu::launch(dim3({grid}), dim3({block}), false, {match.group(1)}, "
    launcher = re.sub(r"(\w+)<<<(.*?)>>>\(", launch_call, launcher, flags=re.S)
    params = re.fullmatch(r"void launch\((.*)\);", declaration.strip()).group(1)
    entries, passed = [], []
    for param in _split_top_level(params) if params else []:
        ctype, name = param.rsplit(" ", 1)
        entries.append(f"{'void*' if ctype == 'torch::Tensor' else ctype} {name}")
        passed.append(f"torch::Tensor{{{name}}}" if ctype == "torch::Tensor" else name)
    entry = (f'\nextern "C" void hv_emulated_launch({", ".join(entries)}) {{ launch({", ".join(passed)}); }}\n'
             'extern "C" int hv_emulated_cooperative_launches() { return hv_emu::cooperative_launches; }\n')
    return cuda + launch_helpers + launcher + entry


def build(source: str, build_dir: Path) -> tuple[ctypes.CDLL, list]:
    """The shared library of an emulated twin (cached by the source's hash) and its entry's argument types."""
    build_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    library = build_dir / f"twin_{digest}.so"
    if not library.exists():
        path = build_dir / f"twin_{digest}.cpp"
        path.write_text(source, encoding="utf-8")
        command = ["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread", "-w", "-include", str(HERE / "emulated.h"),
                   f"-I{HERE / 'include'}", f"-I{cuda_include()}", "-o", str(library), str(path)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"g++ could not build the emulated twin:\n{done.stderr[-6000:]}")
    entry = re.search(r'extern "C" void hv_emulated_launch\((.*?)\) \{', source).group(1)
    types = [CTYPES["torch::Tensor" if p.startswith("void*") else p.rsplit(" ", 1)[0]] for p in _split_top_level(entry)] if entry else []
    lib = ctypes.CDLL(str(library))
    lib.hv_emulated_launch.argtypes = types
    lib.hv_emulated_launch.restype = None
    return lib, types


def emulated_launch(twin, launch_helpers: str, build_dir: Path):
    """A launch function for the twin harness's check(): the twin run by the emulation on CPU tensors (moved to
    shared memory first, where a cooperative launch's block processes write)."""
    lib, types = build(emulated_source(twin.cuda, launch_helpers, twin.launcher, twin.declaration), build_dir)

    def launch(*args):  # (launch.cooperative(): how many of its launches were cooperative so far)
        values = []
        for value, ctype in zip(args, types):
            if ctype is ctypes.c_void_p:
                value.share_memory_()
                values.append(value.data_ptr())
            else:
                values.append(value)
        lib.hv_emulated_launch(*values)
    launch.cooperative = lib.hv_emulated_cooperative_launches
    return launch


def launch_helpers_of(extraction: Path) -> str:
    """The launch helpers of the extraction's twin_harness.py (read as text)."""
    text = (extraction / "twin_harness.py").read_text(encoding="utf-8")
    return re.search(r'LAUNCH_HELPERS = r"""(.*?)"""', text, re.S).group(1)


def check_emulated(extraction: Path, module: str, twin, build_dir: Path, launches: list | None = None) -> bool:
    """The twin harness's check of `twin` (translated from OUT/<module>) on the CPU, the emulation as its launch
    (appended to `launches` when given)."""
    sys.path.insert(0, str(extraction))
    try:
        spec = importlib.util.spec_from_file_location("twin_harness", extraction / "twin_harness.py")
        harness = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(harness)
        graph, kernel_file = module.split("/")
        namespace = {"__file__": str(extraction / graph / "twin" / (kernel_file[:-3] + "_twin.py")),
                     "KERNEL_FILE": kernel_file, "PARAMS": list(twin.params)}
        launch = emulated_launch(twin, launch_helpers_of(extraction), build_dir)
        if launches is not None:
            launches.append(launch)
        return harness.Twin(namespace).check(device="cpu", launch=launch)
    finally:
        sys.path.remove(str(extraction))
