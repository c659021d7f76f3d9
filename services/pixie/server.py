"""Pixie server: the app (store, peers, worker, scheduler) behind PixieService (SPEC §9)."""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc.aio

from novaberg.pixie.v1 import pixie_pb2, pixie_pb2_grpc
from novaberg_core.bootstrap import run_from_env
from novaberg_core.channels import Peers
from novaberg_core.metrics import StoreSampler
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.server import RunningServer
from novaberg_core.server import create_server as create_grpc_server
from services.pixie.app.erasure import Erasures
from services.pixie.app.promotion import PromotionWorker
from services.pixie.config import PixieConfig
from services.pixie.rights_servicer import erasures_of
from services.pixie.scheduler import Scheduler
from services.pixie.servicer import PixieServicer
from services.pixie.store import PixieStore
from services.pixie.types import StepHook

FULL_SERVICE_NAME = pixie_pb2.DESCRIPTOR.services_by_name["PixieService"].full_name


@dataclass(eq=False)
class PixieApp:
    """Everything one Pixie replica runs; owns its resources and closes them in order."""

    cfg: PixieConfig
    store: PixieStore
    peers: Peers
    plog: PipelineLog
    worker: PromotionWorker
    scheduler: Scheduler
    owns_plog: bool = field(kw_only=True)
    """Whether closing the app closes the pipeline log (False: the caller's, e.g. a test's sink)."""
    erasures: Erasures = field(init=False)
    """Finishes interrupted erasures (at start, then every scheduler interval)."""
    sampler: StoreSampler = field(init=False)
    """The parked-job gauge, read when scraped (at most every 10 s)."""

    def __post_init__(self) -> None:
        self.erasures = erasures_of(self.scheduler)
        self.sampler = StoreSampler(self.store.parked_count)

    @classmethod
    async def open(
        cls,
        cfg: PixieConfig,
        *,
        pipeline_log: PipelineLog | None = None,
        step_hook: StepHook | None = None,
    ) -> PixieApp:
        """Connects the store (migrations applied) and the peers' channels; starts no background work."""
        store = await PixieStore.open(cfg.postgres_url, max_size=cfg.concurrency + 4)
        peers = Peers.connect(cfg.kzg_addr, cfg.lzg_addr, cfg.common.tls, log_addr=cfg.log_addr)
        plog = pipeline_log if pipeline_log is not None else PipelineLog.from_env("Pixie", tls=cfg.common.tls)
        await plog.start()
        worker = PromotionWorker(
            kzg=peers.kzg, lzg=peers.lzg, store=store, plog=plog, replica_id=cfg.replica_id,
            settings=cfg, step_hook=step_hook,
        )
        scheduler = Scheduler(
            store=store, worker=worker, lzg=peers.lzg, log=peers.log, plog=plog,
            replica_id=cfg.replica_id, settings=cfg,
        )
        return cls(cfg, store, peers, plog, worker, scheduler, owns_plog=pipeline_log is None)

    def start_background(self) -> None:
        """The promotion worker, the daily loop and the resumption of unfinished erasures."""
        self.scheduler.start()
        self.erasures.start()

    async def close(self) -> None:
        """Background loops finish their current step → log flushed → channels → pool."""
        await self.erasures.stop()
        self.sampler.close()
        await self.scheduler.stop()
        if self.owns_plog:
            await self.plog.close()
        await self.peers.close()
        await self.store.close()


async def create_server(
    cfg: PixieConfig,
    *,
    app: PixieApp | None = None,
    background: bool = True,
    pipeline_log: PipelineLog | None = None,
) -> RunningServer:
    """Starts PixieService on ``cfg.common.port`` (0 → free port); closes the app on stop.

    ``app`` lets tests keep a handle on the worker and scheduler; ``background=False`` serves the
    API without the continuous worker and the daily loop.
    """
    the_app = app if app is not None else await PixieApp.open(cfg, pipeline_log=pipeline_log)

    def register(server: grpc.aio.Server) -> None:
        pixie_pb2_grpc.add_PixieServiceServicer_to_server(PixieServicer(the_app.scheduler), server)

    try:
        running = await create_grpc_server(
            cfg.common, register, [FULL_SERVICE_NAME], on_shutdown=[the_app.close]
        )
    except BaseException:
        await the_app.close()
        raise
    if background:
        the_app.start_background()
    return running


def main() -> None:
    """``python -m services.pixie``."""
    run_from_env(PixieConfig.from_env, create_server)


__all__ = ["FULL_SERVICE_NAME", "PixieApp", "create_server", "main"]
