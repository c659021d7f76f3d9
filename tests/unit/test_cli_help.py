"""The ``novaberg`` parser: every argument explained, common options at any level, the glossary
linked and complete for what the CLI prints, a working command in the serving hint (issue 16)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from novaberg_dev import cli
from services.pixie.types import COUNT_KEYS

REPO = Path(__file__).resolve().parents[2]
GLOSSARY = REPO / "docs" / "glossary.md"
LEFT_TO_THE_EXPLORER = {"graph"}
"""``novaberg graph`` is being replaced on another branch; its arguments are checked there."""


def _parsers(
    parser: argparse.ArgumentParser, path: str = "novaberg"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                if name not in LEFT_TO_THE_EXPLORER:
                    yield from _parsers(child, f"{path} {name}")


def test_every_argument_of_every_command_has_help() -> None:
    missing = []
    for path, parser in _parsers(cli.build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{path} {c.dest}" for c in action._choices_actions if not c.help]
            elif not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


@pytest.mark.parametrize("argv", [
    ["--data-dir", "X", "pixie", "runs"], ["pixie", "--data-dir", "X", "runs"],
    ["pixie", "runs", "--data-dir", "X"],
    ["log", "t-1", "--data-dir", "X"], ["--data-dir", "X", "inspect", "--node", "3"],
])  # fmt: skip
def test_common_options_stand_before_or_after_the_subcommand(argv: list[str]) -> None:
    args = cli.build_parser().parse_args(argv)
    assert args.data_dir == Path("X")


def test_without_data_dir_the_stack_file_or_the_variables_decide() -> None:
    assert getattr(cli.build_parser().parse_args(["pixie", "runs"]), "data_dir", None) is None


@pytest.mark.parametrize("command", [["trigger"], ["pause"], ["resume"], ["runs", "--task"]])
def test_a_task_name_is_one_of_pixies_tasks(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli.build_parser()
    assert parser.parse_args(["pixie", *command, "synapsen_decay"]).task == "synapsen_decay"
    with pytest.raises(SystemExit) as refused:  # a misspelt task fails here, before any call
        parser.parse_args(["pixie", *command, "synapsen_decy"])
    assert refused.value.code == 2
    assert "invalid choice: 'synapsen_decy'" in capsys.readouterr().err


def test_help_links_the_glossary(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "docs/glossary.md" in out and str(GLOSSARY) in out
    assert GLOSSARY.exists()


def _glossary_terms() -> set[str]:
    terms: set[str] = set()
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if line.startswith("- "):
            head = line[2:].split(" — ", 1)[0]
            terms |= set(re.findall(r"`([^`]+)`", head))
    return terms


def test_the_glossary_has_one_line_for_each_term_the_cli_shows() -> None:
    terms = _glossary_terms()
    seed_abbreviations = {"syn §n", "mem §n", "kzg §n"}
    spec_glossary = {"Paar", "Beobachter", "Session", "KZG", "LZG", "Salienz", "Schicht", "Schale", "Akte",
                     "Pixie", "pipeline_log", "Cluster"}  # SPEC §0
    arts = {"eingang", "prompt", "berechnung", "switch", "db_write", "db_read", "ausgabe", "fehler",
            "bemerkung", "span_start", "span_end", "token", "turn_roh"}  # SPEC §8
    shown = {  # data names the CLI and the demo print (recall, inspect, observe, log, pixie, the demo)
        "lzg_resonanz", "sprung_tiefe", "gravitation_faktor", "schale", "gewicht_decay", "sortier_gewicht",
        "gewicht_roh", "gewicht_absolut", "haeufigkeit", "themen", "erstellt_am", "verstaerkt_am", "decay_am",
        "beobachter", "salienz", "verwendung", "ausgang", "geprueft", "schwelle", "deckel", "naehe",
        "verwendet", "kanten_neu", "entitaet", "verbindungs_gruende", "synapsen_promotion", "synapsen_decay",
        "gedaechtnistyp", "dimension", "emotion", "art", "node", "quelle", "inhalt", "kzg_quell_key", "Bild",
        "lzg_knoten",
    }  # fmt: skip
    assert seed_abbreviations | spec_glossary | arts | shown <= terms
    lines = [line for line in GLOSSARY.read_text(encoding="utf-8").splitlines() if line.startswith("- ")]
    assert all(" — " in line for line in lines)  # one line each: term — meaning


def test_every_pixie_count_is_explained_in_words() -> None:
    decay = {"nodes_decayed", "nodes_deactivated", "log_rows_deleted", "kept_turn_roh", "runs_deleted"}
    assert set(COUNT_KEYS) | {"out_of_scope"} | decay <= set(cli.COUNT_WORDS)


def test_the_serving_hint_names_a_command_this_shell_can_run(monkeypatch: pytest.MonkeyPatch) -> None:
    venv_script = Path(sys.executable).parent / "novaberg"
    assert venv_script.exists()  # `make venv` installs the entry point
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # the venv is not activated
    command = cli.cli_command()
    assert not command.startswith("novaberg ") and Path(REPO / command).resolve() == venv_script.resolve()
    assert cli.cli_command(Path("elsewhere")).endswith(" --data-dir elsewhere")
    monkeypatch.setenv("PATH", f"{venv_script.parent}:/usr/bin:/bin")  # activated: the plain name works
    assert cli.cli_command() == "novaberg"
