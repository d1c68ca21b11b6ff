"""What every CUDA twin of this extraction shares: the CUDA toolkit from pip when there is no other, the build with
torch.utils.cpp_extension.load_inline (with the launchers' C++ helpers), the Triton module a twin mirrors (bound to
the extraction's harness.py), --check, --bench and the command line.

Written once per extraction by `harvest twin` (hashed in manifest.json); each twin module <graph>/twin/<kernel>_twin.py
imports it relative to its own file:
    sys.path.insert(0, <the extraction directory>); from twin_harness import main
A twin module holds what is its own: KERNEL_FILE (the Triton module in ../; <kernel>.cu sits beside the twin module),
PARAMS (the launcher's parameters, passed from the Triton module's ARGUMENTS by name), DECLARATION and LAUNCHER.
"""

import argparse
import importlib.util
import json
import os
import re
import sys
from pathlib import Path

import torch

TWIN_HARNESS_VERSION = 1
NEEDS_A_GPU = 9  # the exit code harvest gives for "needs a GPU" (`harvest --help`, exit codes), as the kernel's --bench does

# What every launcher uses; the build puts it between the kernel (<kernel>.cu) and the twin module's LAUNCHER.
LAUNCH_HELPERS = r"""
// ---- launcher (load_inline compiles this after the kernel above) ----
// torch/types.h (ATen's tensors, TORCH_CHECK: what a launcher uses), not torch/extension.h, whose Python and
// pybind11 headers only the extension's main.cpp needs: nvcc compiles this file in half the time.
#include <algorithm>
#include <torch/types.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

namespace hv {
// Pointwise: one chunk of per_thread elements per thread, no grid-stride loop: a grid over 2^31 - 1 blocks is
// refused, not capped.
inline unsigned int pointwise_blocks(int64_t numel, int threads, int per_thread) {
  const int64_t blocks = (numel + threads * per_thread - 1) / (threads * per_thread);
  TORCH_CHECK(blocks <= 2147483647, "more elements than one grid of 2^31 - 1 blocks covers: ", numel);
  return static_cast<unsigned int>(blocks);
}

// Tiles: a 32 x 32 tile of a 2-D pointwise kernel per block of 32 x 8 threads, the tiles of the axis the block's
// warps run along first.
inline unsigned int tile_blocks(int64_t fast, int64_t slow) {
  const int64_t blocks = ((fast + 31) / 32) * ((slow + 31) / 32);
  TORCH_CHECK(blocks <= 2147483647, "more tiles than one grid of 2^31 - 1 blocks covers: ", fast, " x ", slow);
  return static_cast<unsigned int>(blocks);
}

// Rows: one thread block per row (the kernel strides over the rows past 2^31 - 1 blocks); threads a power of two
// from 32 to 512, about one per unit of work: an element of a persistent row, or the columns a looped reduction's
// thread takes a step (its launcher passes the row's length over those).
inline unsigned int row_blocks(int64_t rows) { return static_cast<unsigned int>(std::min<int64_t>(rows, 2147483647)); }

inline int row_threads(int64_t rnumel) {
  int threads = 32;
  while (threads < rnumel && threads < 512) threads *= 2;
  return threads;
}

// Short rows (a persistent reduction of up to 1024 values): one warp per row, 4 rows per block of 128 threads.
constexpr int WARP_ROWS_PER_BLOCK = 4;
inline unsigned int warp_row_blocks(int64_t rows) {
  return static_cast<unsigned int>(std::min<int64_t>((rows + WARP_ROWS_PER_BLOCK - 1) / WARP_ROWS_PER_BLOCK, 2147483647));
}

// Columns (the reduced dimension is the outer one): 32 rows per block along threadIdx.x, and along threadIdx.y a
// power of two up to 16 threads per row, one per value of a short column. From 65536 rows on (2048 blocks or more,
// plenty to fill the GPU) each of them takes 8 values or more instead: on the H200, 131072 columns of 32 took
// 14.8 us with 4 threads a column against 20.4 us with 16, while 64 to 2048 columns of 8 to 64 lost 40-70 % with
// fewer threads (session 20, docs/twins-h200.md).
inline unsigned int column_blocks(int64_t rows) {
  return static_cast<unsigned int>(std::min<int64_t>((rows + 31) / 32, 2147483647));
}

inline dim3 column_threads(int64_t rows, int64_t rnumel) {
  const int64_t per_thread = rows >= 65536 ? 8 : 1;
  int lanes = 1;
  while (lanes * per_thread < rnumel && lanes < 16) lanes *= 2;
  return dim3(32, lanes);
}

// Split rows (a cooperative reduction's twin): blocks per row, as many as the GPU holds at once beside the other
// rows' blocks (a cooperative launch needs every block resident), each with 4 steps of its threads' columns or more;
// 1 where the rows alone fill the GPU or the device has no cooperative launch.
inline int32_t row_splits(const void* kernel, int64_t rows, int64_t rnumel, int threads, int step) {
  int device = 0, cooperative = 0, sms = 0, per_sm = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  const int64_t resident = int64_t(per_sm) * sms;
  if (!cooperative || rows * 2 > resident) return 1;
  const int64_t by_work = rnumel / (int64_t(threads) * step * 4);
  return static_cast<int32_t>(std::max<int64_t>(1, std::min<int64_t>(resident / rows, by_work)));
}

inline unsigned int split_blocks(int64_t rows, int32_t splits) {
  return splits > 1 ? static_cast<unsigned int>(rows * splits) : row_blocks(rows);
}

// The blocks' partials of a split row, one 16-byte cell per block and reduction (nothing with one split).
inline torch::Tensor split_workspace(int32_t splits, int64_t bytes) {
  return torch::empty({splits > 1 ? bytes : 0}, torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA, c10::cuda::current_device()));
}

// A launch on the current stream, cooperative (every block resident; the kernel may wait at grid barriers) or not.
template <typename... Params, typename... Args>
void launch_rows_split(bool cooperative, void (*kernel)(Params...), unsigned int blocks, int threads, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = 0;
  config.stream = c10::cuda::getCurrentCUDAStream();
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeCooperative;
  attribute.val.cooperative = cooperative ? 1 : 0;
  config.attrs = &attribute;
  config.numAttrs = 1;
  C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...));
}
}  // namespace hv
"""


def pip_cuda_toolkit(build_dir):
    """With no CUDA toolkit (no nvcc on PATH, no CUDA_HOME), the one `pip install harvest[cuda]` brings: its
    directory as CUDA_HOME, and a link-time libcudart.so (the wheel ships only libcudart.so.<major>).
    Returns the extra linker flags, [] when a toolkit is already there."""
    import glob
    import shutil

    if shutil.which("nvcc") or os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH"):
        return []
    for site in sys.path:
        for home in sorted(glob.glob(os.path.join(site, "nvidia", "cu1[0-9]"))):
            if os.path.isfile(os.path.join(home, "bin", "nvcc")):
                os.environ["CUDA_HOME"] = home
                extension = sys.modules.get("torch.utils.cpp_extension")
                if extension is not None:  # imported already: it read CUDA_HOME when it was
                    extension.CUDA_HOME = home
                runtime = sorted(glob.glob(os.path.join(home, "lib", "libcudart.so.*")))
                if not runtime:
                    return []
                link_dir = os.path.join(build_dir, "cudart")
                os.makedirs(link_dir, exist_ok=True)
                link = os.path.join(link_dir, "libcudart.so")
                if not os.path.exists(link):
                    os.symlink(runtime[0], link)
                return [f"-L{link_dir}", f"-L{os.path.join(home, 'lib')}"]
    return []


class Twin:
    """One twin module with this harness bound to it (scripts/gpu/parts/twins.py passes a launch function it built itself
    to check() and bench())."""

    def __init__(self, namespace):
        self.namespace = namespace
        self.here = os.path.dirname(os.path.abspath(namespace["__file__"]))
        self.name = os.path.splitext(namespace["KERNEL_FILE"])[0]  # the kernel's name: <name>.py, <name>.cu
        self.PARAMS = namespace["PARAMS"]

    def build(self, verbose=False):
        """Compile <kernel>.cu and the launcher with load_inline (cached by torch: a rebuild only on change)."""
        with open(os.path.join(self.here, self.name + ".cu"), encoding="utf-8") as f:
            kernel = f.read()
        build_dir = os.path.join(self.here, "build", self.name)
        os.makedirs(build_dir, exist_ok=True)
        ldflags = pip_cuda_toolkit(build_dir)
        from torch.utils.cpp_extension import load_inline  # after CUDA_HOME is settled: it reads it on import

        graph = os.path.basename(os.path.dirname(self.here))
        return load_inline(
            name=re.sub(r"\W", "_", f"harvest_twin_{graph}_{self.name}"),
            cpp_sources=self.namespace["DECLARATION"],
            cuda_sources=kernel + LAUNCH_HELPERS + self.namespace["LAUNCHER"],
            functions=["launch"],
            build_directory=build_dir,
            extra_cuda_cflags=["-O3", "-lineinfo"],
            extra_ldflags=ldflags,
            verbose=verbose,
        )

    def build_emulated(self):
        """The twin compiled for the CPU by harvest's CUDA emulation (g++; harvest.twin.emulate): its launch."""
        from harvest.twin.emulate import emulated_launch  # (harvest installed: the emulation is harvest's)

        with open(os.path.join(self.here, self.name + ".cu"), encoding="utf-8") as f:
            kernel = f.read()
        build_dir = os.path.join(self.here, "build", self.name, "emulated")
        return emulated_launch(kernel, LAUNCH_HELPERS, self.namespace["LAUNCHER"], self.namespace["DECLARATION"], Path(build_dir))

    def triton_module(self):
        """The extracted Triton module this twin mirrors: its record, made-up inputs, eager reference and compare()."""
        path = os.path.join(self.here, "..", self.namespace["KERNEL_FILE"])
        harness = sys.modules.get("harness")  # another extraction's, imported earlier in this process: not ours
        if harness is not None and os.path.dirname(os.path.abspath(harness.__file__ or "")) != os.path.dirname(os.path.dirname(self.here)):
            del sys.modules["harness"]
        spec = importlib.util.spec_from_file_location(f"{self.name}_triton", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return sys.modules[module.main.__module__].Kernel(vars(module))  # bound to its extraction's harness.py

    def check(self, device="cuda", seed=0, launch=None):
        """Run the twin on the recorded inputs; compare every output with the record and the eager reference.
        `launch`: the compiled twin's launch function (default: build this one)."""
        kernel = self.triton_module()
        launch = launch or self.build().launch
        record = kernel.load_record(device)
        args, recorded = record if record is not None else (kernel.make_inputs(device, seed), {})
        if record is None:
            print(f"no record: made-up inputs (seed {seed}), only the eager reference compares")
        reference_args = kernel.reference_args(args, clone=True)  # (a reference that reads no tensor takes `device`)
        launch(*[args[name] for name in self.PARAMS])
        if str(device).startswith("cuda"):
            torch.cuda.synchronize()
        expected = kernel.expected(reference_args)
        print(f"{self.name} CUDA twin on {device} ({'recorded inputs' if record is not None else 'made-up inputs'}):")
        ok = True
        for name in kernel.OUTPUTS:
            compared = []
            if name in recorded:  # never bit for bit: the twin adds in another order
                compared.append(kernel.compare(name, args[name], recorded[name], "recorded"))
            if name in expected:
                compared.append(kernel.compare(name, kernel.compared_actual(name, args, expected[name]), expected[name], "reference"))
            if not compared:
                print(f"  {name}: NOT COMPARED: no record and no reference for it")
            ok = ok and bool(compared) and all(compared)
        return ok

    def bench(self, device="cuda", seed=0, json_path=None, launch=None):
        """Time the twin and the Triton kernel on the same inputs with the Triton module's own timing lines (CUDA
        events after a warm-up, L2 flushed before each repetition, median and p20/p80, GB/s against a device copy)."""
        kernel = self.triton_module()
        launch = launch or self.build().launch
        args, inputs = kernel.bench_inputs(device, seed)
        ordered = [args[name] for name in self.PARAMS]
        flush = kernel.l2_flush_buffer(device)
        timings = {
            "twin": kernel.time_gpu(lambda: launch(*ordered), flush),
            "kernel": kernel.time_gpu(lambda: kernel.launch(**args), flush),
        }
        moved = kernel.bytes_moved()
        result = kernel.bench_result(self.name, device, inputs, moved, timings, kernel.copy_bandwidth(flush, device))
        kernel.print_bench(result)
        print(f"twin / Triton kernel = {timings['twin']['median_ms'] / timings['kernel']['median_ms']:.3f}")
        if json_path:
            with open(json_path, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1)
        return result


def main(namespace):
    """A twin module's command line: --check (the default), --bench [--json FILE], --seed. Returns the exit code."""
    twin = Twin(namespace)
    parser = argparse.ArgumentParser(description=f"{twin.name}: CUDA C++ twin of an extracted Triton kernel.")
    parser.add_argument("--check", action="store_true", help="compare every output with the record and the eager reference (default)")
    parser.add_argument("--bench", action="store_true", help="time the twin and the Triton kernel")
    parser.add_argument("--json", metavar="FILE", help="with --bench: also write the timings as JSON")
    parser.add_argument("--seed", type=int, default=0, help="seed for made-up inputs (used when there is no record)")
    parser.add_argument("--emulate", action="store_true",
                        help="--check on the CPU, no GPU needed: the .cu and its launcher compiled with g++ against "
                             "harvest's CUDA emulation (threads, barriers for __syncthreads and shuffles); slow, no timing")
    options = parser.parse_args()
    if options.emulate:
        if options.bench:
            print("--emulate checks a twin; it gives no timing (--bench needs a GPU)", file=sys.stderr)
            return 2
        try:
            from harvest.errors import HarvestError
        except ImportError:
            print("--emulate needs harvest installed (`pip install harvest`): the CUDA emulation is harvest's", file=sys.stderr)
            return 2
        try:
            launch = twin.build_emulated()
            print(f"{twin.name}: emulated on the CPU (g++ against harvest's CUDA emulation; no timing)")
            return 0 if twin.check("cpu", options.seed, launch=launch) else 1
        except HarvestError as error:
            print(f"--emulate: {error}", file=sys.stderr)
            return error.exit_code
        except OSError as error:
            print(f"--emulate: {error.strerror}: {error.filename} (`harvest twin` writes the twin's files again)", file=sys.stderr)
            return 2
    if not torch.cuda.is_available():
        print(f"the CUDA twin needs a GPU to run (torch sees no CUDA device); `nvcc -ptx -arch=sm_90 {twin.name}.cu` "
              "compiles it anywhere, and --check --emulate runs it on the CPU", file=sys.stderr)
        return NEEDS_A_GPU
    ok = True
    if options.check or not options.bench:
        ok = twin.check("cuda", options.seed)
    if options.bench:
        twin.bench("cuda", options.seed, options.json)
    return 0 if ok else 1
