"""``python -m novaberg_dev.cli``: the ``novaberg`` command without its console script."""

from __future__ import annotations

import sys

from novaberg_dev.cli.app import main

sys.exit(main())
