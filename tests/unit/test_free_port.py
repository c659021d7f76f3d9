"""Listening ports for the stack and the embedded stores come from below the kernel's ephemeral range."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from novaberg_dev.embedded import state
from novaberg_dev.embedded.state import HOST, free_port


def test_a_free_port_lies_below_the_ephemeral_range_and_can_be_listened_on() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    if low <= 11_000:
        pytest.fail(f"this host's ephemeral range starts at {low}; the test assumes Linux's default 32768")
    ports = {free_port() for _ in range(20)}
    assert all(10_000 <= port < low for port in ports)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, ports.pop()))
        sock.listen()


def test_without_a_readable_range_the_kernel_chooses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(state, "_EPHEMERAL_RANGE", tmp_path / "missing")
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, port))
