"""The mTLS tests' certificate authority, identities and stand-in server (tests/service/mtls/stand_in.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from novaberg_core.server import RunningServer
from novaberg_core.tls import TlsConfig
from novaberg_dev.devcerts import CertificateAuthority, write_identity_files
from tests.service.mtls.stand_in import IDENTITIES, StandIn, serve_stand_in


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.create("test CA")


@pytest.fixture(scope="module")
def certs(ca: CertificateAuthority, tmp_path_factory: pytest.TempPathFactory) -> dict[str, TlsConfig]:
    return write_identity_files(tmp_path_factory.mktemp("certs"), ca, IDENTITIES)


@pytest.fixture
async def server(certs: dict[str, TlsConfig]) -> AsyncIterator[tuple[StandIn, RunningServer]]:
    stand_in, running = await serve_stand_in(certs["kzg"], health_port=0)
    try:
        yield stand_in, running
    finally:
        await running.stop(None)
