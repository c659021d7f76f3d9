"""``python -m novaberg_dev.embedded``: see :mod:`novaberg_dev.embedded.command`."""

from __future__ import annotations

from novaberg_dev.embedded.command import main

raise SystemExit(main())
