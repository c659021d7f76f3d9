"""Pixie server: the app (store, clients, worker, scheduler) behind PixieService (SPEC §9)."""

from __future__ import annotations

import grpc.aio

from novaberg.pixie.v1 import pixie_pb2, pixie_pb2_grpc
from novaberg_core.metrics import StoreSampler
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.server import RunningServer, serve
from novaberg_core.server import create_server as create_grpc_server
from novaberg_core.telemetry import configure_logging
from services.pixie.clients import ServiceClients
from services.pixie.config import PixieConfig
from services.pixie.promotion import PromotionWorker
from services.pixie.promotion_types import StepHook, WorkerSettings
from services.pixie.rights_servicer import erasures_of
from services.pixie.scheduler import Scheduler, SchedulerSettings
from services.pixie.servicer import PixieServicer
from services.pixie.store import PixieStore

SERVICE_NAME = pixie_pb2.DESCRIPTOR.services_by_name["PixieService"].full_name


class PixieApp:
    """Everything one Pixie replica runs; owns its resources and closes them in order."""

    def __init__(
        self,
        cfg: PixieConfig,
        store: PixieStore,
        clients: ServiceClients,
        plog: PipelineLog,
        worker: PromotionWorker,
        scheduler: Scheduler,
        *,
        owns_plog: bool,
    ) -> None:
        self.cfg = cfg
        self.store = store
        self.clients = clients
        self.plog = plog
        self.worker = worker
        self.scheduler = scheduler
        self._owns_plog = owns_plog
        self.erasures = erasures_of(scheduler)
        """Finishes interrupted erasures (at start, then every scheduler interval)."""
        self.sampler = StoreSampler(store.parked_count)  # read when scraped, at most every 10 s

    @classmethod
    async def open(
        cls,
        cfg: PixieConfig,
        *,
        pipeline_log: PipelineLog | None = None,
        step_hook: StepHook | None = None,
    ) -> PixieApp:
        """Connects the store (migrations applied) and the service clients; starts no background work."""
        store = await PixieStore.open(cfg.postgres_url, max_size=cfg.concurrency + 4)
        clients = ServiceClients.connect(cfg.kzg_addr, cfg.lzg_addr, cfg.log_addr, cfg.common.tls)
        plog = pipeline_log if pipeline_log is not None else PipelineLog.from_env("Pixie", tls=cfg.common.tls)
        await plog.start()
        worker = PromotionWorker(
            kzg=clients.kzg, lzg=clients.lzg, store=store, plog=plog, replica_id=cfg.replica_id,
            settings=WorkerSettings.from_config(cfg), step_hook=step_hook,
        )
        scheduler = Scheduler(
            store=store, worker=worker, lzg=clients.lzg, log=clients.log, plog=plog,
            replica_id=cfg.replica_id,
            settings=SchedulerSettings(
                decay_at=cfg.decay_at, scheduler_interval_s=cfg.scheduler_interval_s,
                stale_run_s=cfg.stale_run_s, daily_retry_s=cfg.daily_retry_s,
                rpc_timeout_s=cfg.rpc_timeout_s, log_retention_days=cfg.log_retention_days,
                run_retention_days=cfg.run_retention_days,
            ),
        )
        return cls(cfg, store, clients, plog, worker, scheduler, owns_plog=pipeline_log is None)

    def start_background(self) -> None:
        """The promotion worker, the daily loop and the resumption of unfinished erasures."""
        self.scheduler.start()
        self.erasures.start()

    async def close(self) -> None:
        """Background loops finish their current step → log flushed → channels → pool."""
        await self.erasures.stop()
        self.sampler.close()
        await self.scheduler.stop()
        if self._owns_plog:
            await self.plog.close()
        await self.clients.close()
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
        running = await create_grpc_server(cfg.common, register, [SERVICE_NAME], on_shutdown=[the_app.close])
    except BaseException:
        await the_app.close()
        raise
    if background:
        the_app.start_background()
    return running


async def main() -> None:
    cfg = PixieConfig.from_env()
    configure_logging(cfg.common.log_level)
    running = await create_server(cfg)
    await serve(running, cfg.common.grace_seconds)


__all__ = ["SERVICE_NAME", "PixieApp", "create_server", "main"]
