"""``python -m services.pixie`` — run the Pixie scheduler service until SIGTERM."""

from __future__ import annotations

from services.pixie.server import main

if __name__ == "__main__":
    main()
