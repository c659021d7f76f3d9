"""``python -m services.kzg`` — run the KZG service until SIGTERM."""

from __future__ import annotations

from services.kzg.server import main

if __name__ == "__main__":
    main()
