"""``python -m engram``: the same as the ``engram`` command."""

import sys

from engram.tui.cli import main

sys.exit(main())
