"""A real headless Chromium (Debian's package, found or installed by ``scripts/ensure_chromium.sh``)
driven by Playwright; Playwright's own browser downloads are never used."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, sync_playwright

ENSURE_CHROMIUM = Path(__file__).resolve().parents[2] / "scripts" / "ensure_chromium.sh"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--enable-unsafe-swiftshader",  # WebGL without a GPU: SwiftShader, allowed explicitly
]  # fmt: skip


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """The Chromium binary; a missing one that cannot be installed fails the test (never a skip)."""
    done = subprocess.run(["bash", str(ENSURE_CHROMIUM)], capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or not done.stdout.strip():
        pytest.fail(f"no headless Chromium for the browser tests: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def browser(chromium_path: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    """One Chromium with a fresh profile (``--user-data-dir``) for the module's tests."""
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=chromium_path, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 900},
        )  # fmt: skip
        try:
            yield context
        finally:
            context.close()
