"""``python -m gridbench.cli``: the command line, as the ``gridbench`` script runs it."""

import sys

from gridbench.cli import main

sys.exit(main())
