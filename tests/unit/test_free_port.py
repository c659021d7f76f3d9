"""Listening ports for the stack and the embedded stores come from below the kernel's ephemeral range."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from novaberg_dev.embedded import state
from novaberg_dev.embedded.state import HOST, free_port, free_ports


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


def test_ports_drawn_together_are_distinct_even_when_the_draws_repeat(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(set(free_ports(10))) == 10  # the real draw
    draws = iter([12_001, 12_001, 12_002, 12_001, 12_003])  # what one-by-one draws may give
    monkeypatch.setattr(state, "free_port", lambda: next(draws))
    assert free_ports(3) == [12_001, 12_002, 12_003]
