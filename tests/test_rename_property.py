"""Property: for random torch programs, every Triton kernel renamed == Inductor's kernel, bit for bit.

Programs of elementwise ops, broadcasts, casts, where and reductions (sum/amax/mean/var/softmax over an axis) in
float32/float16/bfloat16 -> torch.compile (CPU Triton path) -> capture -> parse -> for every kernel: the renamed
kernel's outputs are bitwise those of Inductor's, and the compiled program is close to eager. CI runs 100 programs
(derandomized, so reproducible); scripts/rename_fuzz.py --programs 1000 runs the long version.
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from pathlib import Path

import pytest
import rename_harness
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PROGRAMS = 100


@pytest.mark.slow  # 100 programs compiled and run through the interpreter
@pytest.mark.filterwarnings("ignore")
def test_renamed_kernels_are_bitwise_identical_on_random_programs(tmp_path: Path) -> None:
    figures: Counter[str] = Counter()
    start = time.perf_counter()

    @settings(max_examples=PROGRAMS, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: st.DataObject) -> None:
        choose = lambda options: data.draw(st.sampled_from(list(options)))  # noqa: E731
        program = rename_harness.make_program(choose, data.draw(st.integers(1, 4), label="steps"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = rename_harness.check_program(program, tmp_path)
        figures["programs"] += 1
        figures["kernels"] += len(result.kernels)
        bad = [k for k in result.kernels if not k.ok]
        figures["mismatches"] += len(bad)
        assert not bad, f"{[(k.kernel, k.message) for k in bad]}\n{program.source}"
        assert result.eager_ok, f"compiled != eager: {result.eager_message}\n{program.source}"

    check()
    print(f"\nrename property: {figures['programs']} programs, {figures['kernels']} kernels, "
          f"{figures['mismatches']} mismatches, {time.perf_counter() - start:.0f} s")
    assert figures["programs"] >= PROGRAMS
    assert figures["kernels"] >= PROGRAMS  # every program compiles to at least one Triton kernel
