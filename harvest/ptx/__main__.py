"""The child process `harvest ptx` compiles Triton kernels in: `python -m harvest.ptx` (see toolchain.py)."""

import sys

from harvest.ptx.toolchain import child_main

sys.exit(child_main())
