"""``python -m gpuscope``: the same as the ``gpuscope`` command (no install needed)."""

import sys

from gpuscope.cli import main

sys.exit(main())
