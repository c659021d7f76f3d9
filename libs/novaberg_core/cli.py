"""The ``novaberg`` command line (one entry point). ``up`` starts the whole stack."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from novaberg_core.stack import SERVICES, start_stack


async def _up(data_dir: Path, once: bool) -> int:
    print(f"starting embedded stores and {len(SERVICES)} services in {data_dir} …", flush=True)
    stack = await start_stack(data_dir)
    try:
        print(f"postgres  {stack.urls.postgres_url}")
        print(f"redis     {stack.urls.redis_url}")
        for service in SERVICES:
            print(f"{service:9} {stack.addresses[service]}  SERVING  (log: {stack.log_path(service)})")
        if once:
            return 0
        print("serving; Ctrl-C stops everything", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        return 0
    finally:
        print("stopping services …", flush=True)
        await stack.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="novaberg", description="Novaberg memory core")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start embedded stores and all five services")
    up.add_argument("--data-dir", type=Path, default=Path(".novaberg"))
    up.add_argument("--once", action="store_true", help="exit 0 after start-up and the demo")
    args = parser.parse_args(argv)
    if args.command == "up":
        with contextlib.suppress(KeyboardInterrupt):
            return asyncio.run(_up(args.data_dir, args.once))
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
