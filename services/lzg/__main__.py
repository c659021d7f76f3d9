"""``python -m services.lzg`` — run the LZG service until SIGTERM."""

from __future__ import annotations

from services.lzg.server import main

if __name__ == "__main__":
    main()
