"""`python -m abibench.cli`, as `python -m abibench` (the module cli.py was runnable)."""

import sys

from . import main

sys.exit(main())
