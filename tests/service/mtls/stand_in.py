"""A server of the one bootstrap serving stand-in handlers, and the calls and certificate files the
mTLS tests (issue 13) use with it: every method of the five services (and of a future data-rights
service) answers an empty response and records the caller the authorisation saw."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import FileDescriptor, MethodDescriptor

from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.authz import caller_identity
from novaberg_core.config import CommonConfig
from novaberg_core.server import RunningServer, create_server
from novaberg_core.tls import CertificateFiles, TlsConfig, channel_credentials
from novaberg_dev.devcerts import IssuedCertificate

FILES: tuple[FileDescriptor, ...] = (
    kzg_pb2.DESCRIPTOR, lzg_pb2.DESCRIPTOR, log_pb2.DESCRIPTOR, pixie_pb2.DESCRIPTOR, pipeline_pb2.DESCRIPTOR,
)  # fmt: skip
SERVICES = tuple(service.full_name for f in FILES for service in f.services_by_name.values())
RIGHTS_SERVICE = "novaberg.rights.v1.RightsService"
"""A stand-in for the data-rights RPCs that do not exist yet (the policy covers them by pattern)."""
IDENTITIES = ("kzg", "lzg", "pipeline", "pixie", "log", "operator", "gateway", "client")


class StandIn:
    """Empty answers for every method of the five services and of :data:`RIGHTS_SERVICE`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []

    def _unary(self, method: str, response: Any) -> Any:
        async def handle(request: Any, context: grpc.aio.ServicerContext) -> Any:
            self.calls.append((method, caller_identity()))
            return response

        return handle

    def _client_stream(self, method: str, response: Any) -> Any:
        async def handle(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
            async for _ in requests:
                pass
            self.calls.append((method, caller_identity()))
            return response

        return handle

    def register(self, server: grpc.aio.Server) -> None:
        for file in FILES:
            for service in file.services_by_name.values():
                handlers = {m.name: self._handler(service.full_name, m) for m in service.methods}
                server.add_generic_rpc_handlers(
                    (grpc.method_handlers_generic_handler(service.full_name, handlers),)
                )
        rights = {
            name: grpc.unary_unary_rpc_method_handler(self._unary(f"{RIGHTS_SERVICE}/{name}", b""))
            for name in (
                "ErasePair",
                "EraseUser",
                "ExportPair",
                "ForgetMemory",
                "CorrectMemory",
                "RequeueParkedJobs",
            )
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(RIGHTS_SERVICE, rights),))

    def _handler(self, service: str, method: MethodDescriptor) -> grpc.RpcMethodHandler:
        request_type = message_factory.GetMessageClass(method.input_type)
        response_type = message_factory.GetMessageClass(method.output_type)
        path = f"{service}/{method.name}"
        options = {
            "request_deserializer": request_type.FromString,
            "response_serializer": response_type.SerializeToString,
        }
        if method.client_streaming:
            return grpc.stream_unary_rpc_method_handler(self._client_stream(path, response_type()), **options)
        return grpc.unary_unary_rpc_method_handler(self._unary(path, response_type()), **options)


def copy_tls_files(tls: TlsConfig, directory: Path) -> TlsConfig:
    """``tls``'s files copied into ``directory`` (so a test can replace them)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Any] = {}
    for field in ("cert_file", "key_file", "ca_file"):
        target = directory / Path(getattr(tls, field)).name
        shutil.copyfile(getattr(tls, field), target)
        paths[field] = str(target)
    return dataclasses.replace(tls, **paths)


def install_tls_files(tls: TlsConfig, issued: IssuedCertificate, ca_pem: bytes | None = None) -> None:
    """Replace ``tls``'s files atomically, as a Secret volume update does."""
    parts = [(tls.cert_file, issued.cert_pem), (tls.key_file, issued.key_pem)]
    if ca_pem is not None:
        parts.append((tls.ca_file, ca_pem))
    for path, data in parts:
        tmp = f"{path}.new"
        Path(tmp).write_bytes(data)
        os.replace(tmp, path)


async def serve_stand_in(tls: TlsConfig, *, health_port: int | None = None) -> tuple[StandIn, RunningServer]:
    stand_in = StandIn()
    cfg = CommonConfig(
        service_name="kzg", host="127.0.0.1", tls=tls, health_port=health_port, grace_seconds=0.5
    )
    running = await create_server(cfg, stand_in.register, SERVICES)
    return stand_in, running


def tls_credentials(tls: TlsConfig) -> grpc.ChannelCredentials:
    return channel_credentials(CertificateFiles(tls).read())


async def call_status(channel: grpc.aio.Channel, method: str, request: bytes = b"") -> grpc.StatusCode:
    """Calls ``method`` (``package.Service/Method``) with raw bytes; the status code."""
    path = f"/{method}"
    try:
        if method == "novaberg.log.v1.LogService/Write":
            await channel.stream_unary(path)(iter([request]), timeout=5)
        else:
            await channel.unary_unary(path)(request, timeout=5)
    except grpc.aio.AioRpcError as error:
        return error.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


async def rpc_error(channel: grpc.aio.Channel, method: str) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await channel.unary_unary(f"/{method}")(b"", timeout=5)
    return raised.value
