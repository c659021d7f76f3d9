"""``python -m services.log`` — run the log service until SIGTERM."""

from __future__ import annotations

from services.log.server import main

if __name__ == "__main__":
    main()
