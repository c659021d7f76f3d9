"""``python -m services.pixie``: serve PixieService until SIGTERM."""

from __future__ import annotations

from novaberg_core.server import run_service
from services.pixie.server import main

if __name__ == "__main__":
    run_service(main)
