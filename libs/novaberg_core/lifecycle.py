"""Processes that live and die together: a launched service never outlives its launcher.

``novaberg up`` (and the test stacks) start each service in a session of its own, so a Ctrl-C in
the terminal reaches the launcher alone, which then stops the services in order. Should the
launcher die without doing so (SIGKILL, a crash, a second Ctrl-C under ``make run | tee``), the
kernel sends each service SIGTERM — their usual graceful stop — through ``PR_SET_PDEATHSIG``, set
by the service itself at start (:func:`die_with_parent`), not in a ``preexec_fn``, which is unsafe
in a launcher that already runs threads.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import sys
from collections.abc import Mapping
from typing import Final

__all__ = ["PARENT_PID_ENV", "die_with_parent"]

PARENT_PID_ENV: Final = "NOVABERG_PARENT_PID"
"""Set by a launcher to its pid: the service then gets SIGTERM when that process ends (Linux)."""

_PR_SET_PDEATHSIG: Final = 1
_LOG = logging.getLogger(__name__)


def die_with_parent(environ: Mapping[str, str] | None = None) -> bool:
    """Ask the kernel for SIGTERM when the launcher named in :data:`PARENT_PID_ENV` ends.

    Returns whether the request is in place. When the launcher already ended before the request
    (a race at start), the process exits at once. Without the variable, or off Linux, nothing
    happens. The signal follows the launcher's thread that started this process, so launchers
    start services from their main thread.
    """
    env = os.environ if environ is None else environ
    raw = env.get(PARENT_PID_ENV, "").strip()
    if not raw or not sys.platform.startswith("linux"):
        return False
    try:
        parent = int(raw)
    except ValueError:
        _LOG.warning("%s=%r is not a pid; the service will not stop with its launcher", PARENT_PID_ENV, raw)
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        _LOG.warning("prctl(PR_SET_PDEATHSIG) failed (errno %d)", ctypes.get_errno())
        return False
    if os.getppid() != parent:
        # The launcher ended before the request was in place: nobody will ever stop us.
        _LOG.warning("launcher %d is gone; exiting", parent)
        sys.exit(0)
    return True
