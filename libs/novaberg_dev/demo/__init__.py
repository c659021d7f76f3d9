"""The demo of ``make run``: a shipped German conversation replayed through the running services.

The conversation and the memories it leaves are German data; everything the demo says about them
is English, with the spec's German data names kept as they are (``docs/glossary.md``).

Meister talks with Nova over seven simulated weeks (``data/demo_conversation.json``, built from
the seeds' own examples). Every turn goes through the pipeline as in production — ObserveTurn
(user), BuildDossier, Dispatch with Nova's scripted answer — with the turn's simulated moment as
``as_of``. After each simulated day Pixie's ``synapsen_promotion`` runs (the continuous worker is
paused meanwhile so the demo shows what each day promoted); after a pause of months the daily
``synapsen_decay`` runs; then a few questions show their dossiers — direct hits and associations
with the path that led to them — and Nova's answer is reinforced by usage (SPEC §5.6).

Every Pixie run of the demo is scoped to the demo's own pair (``TriggerTask.pairs``): its simulated
clock runs months ahead, and another pair in the same stores must not age with it or lose log
rows. Pausing the worker delays other pairs' promotions for the demo's duration, no more.

    script = load_script()
    async with DevClients(stack.addresses) as clients:
        result = await run_demo(clients, script)

:mod:`~novaberg_dev.demo.script` reads the conversation, :mod:`~novaberg_dev.demo.runner` replays it,
:mod:`~novaberg_dev.demo.report` puts what the services answered into words.
"""

from __future__ import annotations

from novaberg_dev.demo.report import describe_path, describe_step, format_dossier, format_protokoll
from novaberg_dev.demo.runner import DemoResult, QuestionOutcome, TurnOutcome, run_demo
from novaberg_dev.demo.script import (
    DEFAULT_DEMO_PATH,
    AnalysisSpec,
    DemoScript,
    ScriptError,
    load_script,
    simulated_start,
)

__all__ = [
    "DEFAULT_DEMO_PATH",
    "AnalysisSpec",
    "DemoResult",
    "DemoScript",
    "QuestionOutcome",
    "ScriptError",
    "TurnOutcome",
    "describe_path",
    "describe_step",
    "format_dossier",
    "format_protokoll",
    "load_script",
    "run_demo",
    "simulated_start",
]
