"""``novaberg import``: LoCoMo and plain turn files become ObserveTurn requests; the progress bar."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from novaberg.common.v1 import common_pb2
from novaberg_dev.cli import (
    CliError,
    ProgressBar,
    observe_batches,
    parse_locomo,
    parse_locomo_date,
    parse_turn_file,
)

LOCOMO = Path("/work/shared/data/locomo/locomo_dev.json")


def small_locomo() -> list[dict[str, object]]:
    return [{
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Caroline", "speaker_b": "Melanie",
            "session_2_date_time": "8:00 pm on 9 June, 2023",
            "session_2": [{"speaker": "Melanie", "dia_id": "D2:1", "text": "Back again!"}],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel!"},
                {"speaker": "Melanie", "dia_id": "D1:2", "text": "Look at this", "blip_caption": "a photo of a cat"},
                {"speaker": "Caroline", "dia_id": "D1:3", "text": "   "},
            ],
        },
        "qa": [],
    }]  # fmt: skip


def test_locomo_dates() -> None:
    assert parse_locomo_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_locomo_date("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert parse_locomo_date("12:30 pm on 1 January, 2024") == datetime(2024, 1, 1, 12, 30, tzinfo=UTC)
    assert parse_locomo_date("sometime") is None


def test_locomo_turns_in_session_order_with_speakers_and_times() -> None:
    turns = parse_locomo(small_locomo())
    assert [t.turn_id for t in turns] == ["conv-1:D1:1", "conv-1:D1:2", "conv-1:D2:1"]  # empty text skipped
    assert turns[0].pair == common_pb2.Pair(user_id="conv-1-caroline", character_id="melanie")
    assert [t.beobachter for t in turns] == [common_pb2.BEOBACHTER_USER, common_pb2.BEOBACHTER_ASSISTANT,
                                             common_pb2.BEOBACHTER_ASSISTANT]  # fmt: skip
    assert turns[1].text == "Look at this [image: a photo of a cat]"
    start = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert turns[0].as_of == start and turns[1].as_of == start + timedelta(seconds=30)
    assert turns[2].as_of == datetime(2023, 6, 9, 20, 0, tzinfo=UTC)


def test_locomo_pair_override_and_sample_filter() -> None:
    turns = parse_locomo(small_locomo(), user_id="u", character_id="nova", samples=["conv-1"])
    assert {(t.pair.user_id, t.pair.character_id) for t in turns} == {("u", "nova")}
    with pytest.raises(CliError, match="no LoCoMo sample named conv-9"):
        parse_locomo(small_locomo(), samples=["conv-9"])


def test_the_shipped_locomo_dev_file_parses_completely() -> None:
    data = json.loads(LOCOMO.read_text())
    turns = parse_turn_file(data, samples=[data[0]["sample_id"]])
    conversation = data[0]["conversation"]
    expected = sum(
        1 for key, value in conversation.items() if key.startswith("session_") and isinstance(value, list)
        for turn in value if turn["text"].strip()
    )
    assert len(turns) == expected > 300
    assert all(t.as_of is not None for t in turns)
    assert len({t.turn_id for t in turns}) == len(turns)
    assert [t.as_of for t in turns] == sorted(t.as_of for t in turns if t.as_of is not None)


def test_plain_turn_file() -> None:
    data = {"turns": [{"role": "user", "text": "Hallo", "as_of": "2026-11-01T10:00:00"},
                      {"role": "assistant", "text": "Hallo!", "turn_id": "t-2"}]}  # fmt: skip
    turns = parse_turn_file(data, user_id="meister")
    assert turns[0].as_of == datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
    assert turns[0].pair == common_pb2.Pair(user_id="meister", character_id="nova")
    assert turns[1].turn_id == "t-2" and turns[1].beobachter == common_pb2.BEOBACHTER_ASSISTANT
    with pytest.raises(CliError, match=r"turns\[0\] needs role"):
        parse_turn_file({"turns": [{"role": "narrator", "text": "x"}]})
    with pytest.raises(CliError, match="unknown conversation format"):
        parse_turn_file({"foo": 1})


def test_a_file_turn_without_an_id_gets_the_same_id_on_every_run() -> None:
    """A second run of an import finds the turns the first wrote (the pipeline knows a turn by its id)."""
    data = {"turns": [{"role": "user", "text": "Hallo"}, {"role": "assistant", "text": "Hallo"},
                      {"role": "user", "text": "Hallo"}]}  # fmt: skip
    first, second = parse_turn_file(data), parse_turn_file(json.loads(json.dumps(data)))
    assert [t.turn_id for t in first] == [t.turn_id for t in second]
    assert [t.turn_id.split("-")[:2] for t in first] == [["turn", "1"], ["turn", "2"], ["turn", "3"]]
    assert len({t.turn_id for t in first}) == 3


def test_a_turn_id_a_file_repeats_is_made_distinct_per_role() -> None:
    """The pipeline refuses a batch naming a turn twice; the file's turns are all kept, under ids of their own."""
    data = {"turns": [{"role": "user", "text": "Eins", "turn_id": "t-1"},
                      {"role": "assistant", "text": "Zwei", "turn_id": "t-1"},
                      {"role": "user", "text": "Drei", "turn_id": "t-1"},
                      {"role": "user", "text": "Vier", "turn_id": "t-1"}]}  # fmt: skip
    assert [t.turn_id for t in parse_turn_file(data)] == ["t-1", "t-1", "t-1~2", "t-1~3"]
    conversation = small_locomo()
    sessions = conversation[0]["conversation"]  # type: ignore[index]
    sessions["session_2"].append({"speaker": "Melanie", "dia_id": "D2:1", "text": "Twice the same id."})  # type: ignore[index]
    assert [t.turn_id for t in parse_locomo(conversation)] == ["conv-1:D1:1", "conv-1:D1:2", "conv-1:D2:1", "conv-1:D2:1~2"]


def test_progress_bar_redraws_one_line_on_a_terminal() -> None:
    stream = io.StringIO()
    bar = ProgressBar(4, label="import x", stream=stream, width=8, live=True)
    bar.advance()
    bar.advance()
    assert stream.getvalue().count("\r") == 2 and "\n" not in stream.getvalue()
    assert "[####....] 2/4  50.0%" in stream.getvalue()
    assert re.search(r"/s ETA \d+:\d\d$", stream.getvalue())
    bar.advance(2)
    bar.finish()
    assert stream.getvalue().endswith("\n") and "[########] 4/4 100.0%" in stream.getvalue()
    assert stream.getvalue().endswith("ETA 0:00\n")


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


def test_progress_bar_writes_periodic_lines_when_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr("novaberg_dev.cli.common.clock", clock)
    stream = io.StringIO()  # not a TTY
    bar = ProgressBar(100, label="import x", stream=stream, width=10, every_s=5.0)
    for _ in range(10):  # 10 turns a second, 10 s long
        clock.now += 1.0
        bar.advance(10)
    bar.finish()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert lines == [
        "import x [#####.....] 50/100  50.0%   10.0/s ETA 0:05",
        "import x [##########] 100/100 100.0%   10.0/s ETA 0:00",
    ]
    bar.finish()  # nothing new: no second final line
    assert len(stream.getvalue().splitlines()) == 2


def test_eta_in_hours() -> None:
    clock_start = ProgressBar(10_000, stream=io.StringIO(), live=False)
    clock_start.done = 1
    clock_start.started -= 1.0
    assert clock_start.render().endswith("ETA 2:46:39")


def test_import_batches_keep_the_order_and_never_mix_pairs() -> None:
    data = json.loads(LOCOMO.read_text())
    turns = parse_turn_file(data, samples=[data[0]["sample_id"], data[1]["sample_id"]])
    batches = observe_batches(turns, size=64)
    assert [t.turn_id for b in batches for t in b.turns] == [t.turn_id for t in turns]
    assert all(0 < len(b.turns) <= 64 for b in batches)
    first_pair = turns[0].pair
    by_pair = [sum(1 for t in turns if t.pair == b.pair) for b in batches]
    assert len({(b.pair.user_id, b.pair.character_id) for b in batches}) == 2 and all(by_pair)
    assert batches[0].pair == first_pair and batches[0].profile == turns[0].profile
    boundary = next(i for i, b in enumerate(batches) if b.pair != first_pair)
    assert all(b.pair == first_pair for b in batches[:boundary]) and len(batches[boundary - 1].turns) <= 64
    assert batches[0].turns[0].as_of.ToDatetime(tzinfo=UTC) == turns[0].as_of
    plain = parse_turn_file({"turns": [{"role": "user", "text": "x" * 15_000}] * 300})
    assert [len(b.turns) for b in observe_batches(plain, size=64)] == [64, 64, 64, 64, 44]
    assert not observe_batches(plain)[0].HasField("profile")
    assert all(b.ByteSize() < 2 * 1024 * 1024 for b in observe_batches(plain, size=256))
    assert [len(b.turns) for b in observe_batches(plain)] == [128, 128, 44]


def test_a_note_stands_on_a_line_of_its_own_above_the_live_bar() -> None:
    stream = io.StringIO()
    bar = ProgressBar(4, label="import x", stream=stream, width=8, live=True)
    bar.advance()
    bar.note("UNAVAILABLE: down; sending the batch again in 1 s")
    bar.advance()
    frames = stream.getvalue().split("\r")
    note, redrawn = frames[2].split("\n")
    assert note == "\x1b[KUNAVAILABLE: down; sending the batch again in 1 s"  # the bar's line cleared first
    assert redrawn.startswith("import x [##......] 1/4")  # and the bar drawn again below
    assert frames[1].startswith("import x [##......] 1/4") and frames[3].startswith("import x [####....] 2/4")

    plain = io.StringIO()
    ProgressBar(4, label="import x", stream=plain, live=False).note("a note")
    assert plain.getvalue() == "a note\n"
