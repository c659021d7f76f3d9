"""The developer tools (``libs/novaberg_dev``) stay readable: no module over 500 lines (issue 15)."""

from __future__ import annotations

from pathlib import Path

DEV_TOOLS = Path(__file__).resolve().parents[2] / "libs" / "novaberg_dev"
MAX_LINES = 500


def test_no_dev_tool_module_is_longer_than_500_lines() -> None:
    modules = sorted(DEV_TOOLS.rglob("*.py"))
    assert len(modules) > 20, "libs/novaberg_dev was not found"
    lengths = {str(path.relative_to(DEV_TOOLS)): len(path.read_text().splitlines()) for path in modules}
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}
