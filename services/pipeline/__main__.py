"""``python -m services.pipeline`` — run the pipeline service until SIGTERM."""

from __future__ import annotations

import os

# One BLAS thread before numpy loads: the query embedding (USE is numpy) is a few small matrix
# products that a second, spinning BLAS thread only slows down on a busy two-core host
# (measured: embed p50 1.1 ms with one thread, 6-27 ms with the default under load).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from services.pipeline.server import main

if __name__ == "__main__":
    main()
