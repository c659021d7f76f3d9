"""``python -m services.lzg`` — run the LZG service until SIGTERM."""

from __future__ import annotations

import os

# One BLAS thread before numpy loads: the cosine over a pair's matrix is a matrix-vector product
# that a second thread slows down on a busy two-core host (bench/lzg_bench.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from services.lzg.server import main

if __name__ == "__main__":
    main()
