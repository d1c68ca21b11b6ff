"""`python -m harvest ...` is the same as the `harvest` command."""

import sys

from harvest.cli import main

sys.exit(main())
