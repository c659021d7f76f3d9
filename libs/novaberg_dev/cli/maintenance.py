"""Maintenance: ``novaberg pixie`` (tasks, runs, trigger, pause, resume, parked; the rights' actions are
in :mod:`novaberg_dev.cli.rights`) and ``novaberg reembed``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from novaberg.common.v1 import common_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.config import ENV_POSTGRES_URL, ENV_REDIS_URL
from novaberg_core.timeutil import from_timestamp, to_timestamp
from novaberg_dev.cli.common import CliError, ProgressBar, parse_as_of
from novaberg_dev.cli.rights import PIXIE_ACTIONS
from novaberg_dev.clients import DevClients

__all__ = ["COUNT_WORDS", "cmd_pixie", "cmd_reembed", "describe_counts", "print_run"]


def _run_line(run: pixie_pb2.Run) -> str:
    started = from_timestamp(run.started_at).strftime("%Y-%m-%d %H:%M:%S") if run.HasField("started_at") else "-"
    counts = ", ".join(f"{k} {v}" for k, v in sorted(run.counts.items()) if v) or "nothing to do"
    scope = f"  pairs {', '.join(f'{p.user_id} · {p.character_id}' for p in run.pairs)}" if run.pairs else ""
    return (f"run {run.id:<5} {run.task:20} {run.outcome:8} {started}"
            f"{f'  day {run.run_day}' if run.run_day else ''}{scope}  {counts}"
            f"{f'  error: {run.error}' if run.error else ''}")


COUNT_WORDS: Mapping[str, str] = {
    # synapsen_promotion (SPEC §5.3)
    "jobs": "promotion jobs read from the queue",
    "promoted_new": "became new nodes in the LZG",
    "already_promoted": "were nodes already (a replay after a crash); their KZG entries were retired",
    "duplicates": "repeated an existing node and reinforced it; their KZG entries stay",
    "half_reactivations": "woke a sleeping node (half-reactivation); their KZG entries stay",
    "expired": "had left the KZG (TTL) before they could be promoted",
    "kzg_deleted": "KZG entries deleted after becoming nodes",
    "kzg_delete_failed": "KZG entries not deleted after becoming nodes (they leave by their TTL)",
    "failed": "failed this time and will be retried after a backoff",
    "parked": "failed too often and were parked (novaberg pixie parked)",
    "deferred_locked": "were left for later: another Pixie worker (usually the continuous one) was promoting "
                       "the same pair at that moment and finishes them",
    "deferred_backoff": "are still waiting out the backoff after an earlier failure",
    "acked": "jobs acknowledged and removed from the queue",
    "erased": "named an entry of a pair erased meanwhile (a person's right): no node, acknowledged",
    "out_of_scope": "belonged to pairs outside this run's --pair list and were left to the worker",
    # synapsen_decay (SPEC §5.7, §8)
    "nodes_decayed": "nodes decayed (gewicht_decay lowered by the days since decay_am)",
    "nodes_deactivated": "nodes fell below 0.1 and became inactive (nothing is deleted)",
    "log_rows_deleted": "pipeline-log rows past the retention deleted",
    "kept_turn_roh": "turn_roh rows past the retention kept (they are never purged)",
    "runs_deleted": "finished Pixie runs past their retention deleted",
}
"""What each count of a Pixie run means, in words (``pixie trigger``, ``import --promote``)."""


def describe_counts(run: pixie_pb2.Run) -> list[str]:
    """One line per non-zero count of ``run``: the number, its name and what it means."""
    ordered = sorted(run.counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [f"  {value:>6} {key}: {COUNT_WORDS.get(key, 'see docs/glossary.md')}"
            for key, value in ordered if value]


def print_run(run: pixie_pb2.Run, out: Callable[[str], None]) -> None:
    """A triggered run: its line, its counts in words, and how to run it anyway when it was skipped."""
    out(_run_line(run))
    for line in describe_counts(run):
        out(line)
    if run.outcome == "skipped":
        out(f"  skipped; `novaberg pixie trigger {run.task} --force` runs it anyway")


def _parse_pair(text: str) -> common_pb2.Pair:
    """``USER:CHARACTER`` (pair ids hold no ``:``, SPEC §0) → a Pair."""
    user, sep, character = text.partition(":")
    if not sep or not user or not character or ":" in character:
        raise CliError(f"--pair must be USER:CHARACTER, e.g. meister:nova, got {text!r}")
    return common_pb2.Pair(user_id=user, character_id=character)


async def cmd_pixie(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    action = args.pixie_command
    if action == "tasks":
        for task in (await clients.call("pixie", "ListTasks", pixie_pb2.ListTasksRequest())).tasks:
            out(f"{task.name:20} {task.schedule:14} priority {task.priority:.2f}"
                f"{'  PAUSED' if task.paused else ''}")
            if task.HasField("last_run"):
                out(f"  last: {_run_line(task.last_run)}")
    elif action == "runs":
        runs = (await clients.call("pixie", "ListRuns", pixie_pb2.ListRunsRequest(
            task=args.task or "", limit=args.limit))).runs  # fmt: skip
        for run in runs:
            out(_run_line(run))
        if not runs:
            out("no runs yet")
    elif action == "trigger":
        request = pixie_pb2.TriggerTaskRequest(
            task=args.task, force=args.force, pairs=[_parse_pair(p) for p in args.pair or ()]
        )
        as_of = parse_as_of(args.as_of)
        if as_of is not None:
            request.as_of.CopyFrom(to_timestamp(as_of))
        print_run((await clients.call("pixie", "TriggerTask", request, timeout=600.0)).run, out)
    elif action in ("pause", "resume"):
        rpc, message = ("PauseTask", pixie_pb2.PauseTaskRequest) if action == "pause" else \
            ("ResumeTask", pixie_pb2.ResumeTaskRequest)
        task = await clients.call("pixie", rpc, message(task=args.task))
        out(f"{task.name}: {'paused' if task.paused else 'running'}")
    elif action == "parked":
        jobs = (await clients.call("pixie", "ListParkedJobs", pixie_pb2.ListParkedJobsRequest(limit=args.limit))).jobs
        for job in jobs:
            out(f"{job.job_id} {job.kzg_key} ({job.user_id} · {job.character_id}) attempts {job.attempts}: "
                f"{job.last_error}")
        if not jobs:
            out("no parked jobs")
    elif action in PIXIE_ACTIONS:
        return int(await PIXIE_ACTIONS[action](clients, args, out))
    return 0


async def cmd_reembed(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    """``novaberg reembed``: every vector of the KZG and LZG stores anew (services stopped), with progress."""
    from novaberg_core.embedding import profile_for, provider_from_env
    from novaberg_dev.embedded import stores_status
    from novaberg_dev.reembed import reembed_kzg, reembed_lzg

    redis_url = os.environ.get(ENV_REDIS_URL, "")
    postgres_url = os.environ.get(ENV_POSTGRES_URL, "")
    if not redis_url or not postgres_url:
        status = stores_status(Path(args.data_dir) / "stores")
        if status.redis is None or status.postgres is None or not status.running:
            raise CliError(f"no running stores in {args.data_dir}/stores and no NOVABERG_REDIS_URL/_POSTGRES_URL; "
                           f"start them with `python -m novaberg_dev.embedded up --data-dir {args.data_dir}/stores`")
        redis_url = redis_url or status.redis.url
        postgres_url = postgres_url or status.postgres.url
    provider = provider_from_env()
    out(f"re-embedding with {provider.stamp}")
    if args.only in (None, "kzg"):
        bar = ProgressBar(0, label="KZG entries")
        done = await reembed_kzg(redis_url, provider, lambda n, total: _progress(bar, n, total))
        bar.finish()
        out(f"KZG: {done.vectors} entries re-embedded")
    if args.only in (None, "lzg"):
        bar = ProgressBar(0, label="LZG nodes")
        threshold = profile_for(provider.model_id).embedding_layer
        lzg = await reembed_lzg(postgres_url, provider, threshold, lambda n, total: _progress(bar, n, total))
        bar.finish()
        out(f"LZG: {lzg.vectors} nodes re-embedded, {lzg.edges} edge cosines recomputed")
    return 0


def _progress(bar: ProgressBar, done: int, total: int) -> None:
    bar.total = total
    bar.advance(done - bar.done)
