"""The offline analyzer's rules: themes, name mentions, dated mentions, salience heuristic."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from novaberg_core.contract import TIME_MAX
from services.pipeline.dates import find_dated_mention
from services.pipeline.text_rules import (
    DETAIL_WORDS,
    SALIENCE_WEIGHTS,
    analyze_text,
    answered_question,
    extract_themes,
    find_mentions,
    has_subject,
    salience_heuristic,
    told_words,
)
from services.pipeline.tokens import tokenize

# Sunday, 29 November 2026, 15:00 UTC
AS_OF = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "zeitpunkt", "praezision"),
    [
        ("Anna hat am 12. März Geburtstag", day(2026, 3, 12), "tag"),
        ("am 3. Oktober 2024 waren wir dort", day(2024, 10, 3), "tag"),
        ("Termin ist am 2027-01-15", day(2027, 1, 15), "tag"),
        ("Treffen am 12.03.2027 um zehn", day(2027, 3, 12), "tag"),
        ("Treffen am 5.12. beim Bäcker", day(2026, 12, 5), "tag"),
        ("morgen gehe ich schwimmen", day(2026, 11, 30), "tag"),
        ("Morgen gehe ich schwimmen", day(2026, 11, 30), "tag"),
        ("übermorgen ist Feiertag", day(2026, 12, 1), "tag"),
        ("gestern war ich beim Arzt", day(2026, 11, 28), "tag"),
        ("Heute regnet es", day(2026, 11, 29), "tag"),
        ("in 3 Tagen fliege ich", day(2026, 12, 2), "tag"),
        ("vor 10 Tagen ist es passiert", day(2026, 11, 19), "tag"),
        ("am Freitag gehen wir ins Kino", day(2026, 12, 4), "tag"),
        ("letzten Freitag war ich krank", day(2026, 11, 27), "tag"),
        ("letzte Woche war anstrengend", day(2026, 11, 16), "woche"),
        ("nächste Woche habe ich Urlaub", day(2026, 11, 30), "woche"),
        ("letzten Monat bin ich umgezogen", day(2026, 10, 1), "monat"),
        ("im März 2025 war ich in Rom", day(2025, 3, 1), "monat"),
        ("letztes Jahr war ich in Rom", day(2025, 1, 1), "jahr"),
        ("im Jahr 2019 habe ich geheiratet", day(2019, 1, 1), "jahr"),
        ("We met on March 12, 2024", day(2024, 3, 12), "tag"),
        ("see you tomorrow", day(2026, 11, 30), "tag"),
        ("last week was hard", day(2026, 11, 16), "woche"),
    ],
)
def test_dated_mention(text: str, zeitpunkt: datetime, praezision: str) -> None:
    mention = find_dated_mention(text, AS_OF)
    assert mention is not None
    assert (mention.zeitpunkt, mention.praezision) == (zeitpunkt, praezision)


@pytest.mark.parametrize("text", ["Guten Morgen, wie geht's?", "Am Morgen trinke ich Kaffee", "Ich mag Katzen", "30.02. gibt es nicht"])
def test_no_dated_mention(text: str) -> None:
    assert find_dated_mention(text, AS_OF) is None


def test_earliest_mention_wins() -> None:
    mention = find_dated_mention("gestern sagte sie, am 12. März ist es soweit", AS_OF)
    assert mention is not None and mention.phrase == "gestern"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Next year we go hiking.", None),  # year 10000: no datetime holds it
        ("Nächstes Jahr wandern wir.", None),
        ("Next weekend we bake.", None),  # past what timedelta arithmetic holds
        ("In 100 years, who knows.", None),
        ("The day after tomorrow we start.", None),  # 9999-12-31 holds, but lies past the stores' last day
        ("Next year, or yesterday?", datetime(9999, 12, 29, tzinfo=UTC)),  # the next mention the stores hold
    ],
)
def test_a_date_past_the_last_day_is_no_mention(text: str, found: datetime | None) -> None:
    mention = find_dated_mention(text, TIME_MAX)
    assert (mention.zeitpunkt if mention else None) == found


def test_naive_as_of_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        find_dated_mention("morgen", datetime(2026, 1, 1))


def test_mentions_and_name_candidates_german() -> None:
    found = find_mentions("Meine Schwester Anna war gestern beim Zahnarzt in Treuchtlingen.")
    assert found.mentions == ("Schwester", "Anna", "Zahnarzt", "Treuchtlingen")
    assert found.candidates == {"Anna", "Treuchtlingen"}


def test_adjacent_candidates_form_one_name_and_adjective_nouns_are_common() -> None:
    found = find_mentions("Der neue Kollege heißt Tom Becker und kommt aus Berlin.")
    assert "Kollege" in found.mentions
    assert found.candidates == {"Tom Becker", "Berlin"}


def test_sentence_initial_name_is_a_candidate_but_stopwords_are_not_mentions() -> None:
    found = find_mentions("Anna hat am Freitag Geburtstag. Ich freue mich.")
    assert found.mentions[0] == "Anna"
    assert "Anna" in found.candidates
    assert "Geburtstag" not in found.candidates  # data/not_entities.txt
    assert "Ich" not in found.mentions and "Freitag" not in found.mentions


def test_english_names() -> None:
    found = find_mentions("I went hiking with my sister Anna in the Alps.")
    assert found.mentions == ("Anna", "Alps")
    assert found.candidates == {"Anna"}  # "the Alps": after a determiner, never created (still looked up)


def test_themes_german_nouns_by_frequency() -> None:
    tokens = tokenize("Der Garten ist schön. Im Garten wachsen Tomaten und Gurken, die Tomaten sind rot.")
    assert extract_themes(tokens) == ["garten", "tomaten", "gurken"]


def test_themes_english_content_words() -> None:
    tokens = tokenize("I love baking bread, and bread with butter is the best.")
    assert extract_themes(tokens) == ["bread", "love", "baking", "butter", "best"]


def test_salience_rule_worked_numbers() -> None:
    none = dict.fromkeys(SALIENCE_WEIGHTS, False)
    assert salience_heuristic(has_content=False, cues={**none, "emotional": True}) == 0.1
    assert salience_heuristic(has_content=True, cues=none) == 0.3
    assert salience_heuristic(has_content=True, cues={**none, "personal": True}) == 0.55
    assert salience_heuristic(has_content=True, cues={**none, "personal": True, "entity": True}) == 0.7
    assert salience_heuristic(has_content=True, cues={**none, "personal": True, "entity": True, "dated": True}) == 0.85
    assert salience_heuristic(has_content=True, cues={**none, "emotional": True, "entity": True}) == 0.65
    assert salience_heuristic(has_content=True, cues={**none, "emotional": True, "importance": True}) == 0.7
    assert salience_heuristic(has_content=True, cues={**none, "personal": True, "detailed": True}) == 0.7
    assert salience_heuristic(has_content=True, cues={**none, "detailed": True}) == 0.45
    assert salience_heuristic(has_content=True, cues=dict.fromkeys(SALIENCE_WEIGHTS, True)) == 1.0
    with pytest.raises(ValueError, match="unknown salience cues"):
        salience_heuristic(has_content=True, cues={"lautstaerke": True})


def test_analyze_text_high_turn() -> None:
    findings = analyze_text("Meine Schwester Anna hat am 12. März Geburtstag.", AS_OF)
    assert findings.themen == ["schwester", "anna", "geburtstag"]
    assert findings.cues == {
        "personal": True, "emotional": False, "entity": True, "dated": True, "importance": False, "detailed": False,
        "answer": False,
    }
    assert findings.salienz == 0.85
    assert findings.gedaechtnistyp == "episodisch"
    assert findings.dimension == "beziehungen"
    assert findings.intentionen == ["information_teilen"]
    assert findings.emotion == "neutral"


def test_a_detailed_account_is_a_cue_a_long_question_is_not() -> None:
    account = "I finally finished building the wooden bookshelf for our living room, it took three rainy weekends."
    assert told_words(account, tokenize(account)) == DETAIL_WORDS  # "for", "our", "it", "took": stopwords
    findings = analyze_text(account, AS_OF)
    assert findings.cues["detailed"] and findings.cues["personal"]
    assert not (findings.cues["entity"] or findings.cues["emotional"] or findings.cues["dated"])
    assert findings.salienz == 0.7  # 0.3 + 0.25 personal + 0.15 detailed: the HIGH gate
    shorter = account.replace(" rainy", "")
    assert told_words(shorter, tokenize(shorter)) == DETAIL_WORDS - 1
    assert analyze_text(shorter, AS_OF).salienz == 0.55
    question = "Did you finally finish building the wooden bookshelf for the living room after three rainy weekends?"
    assert told_words(question, tokenize(question)) == 0
    assert not analyze_text(question, AS_OF).cues["detailed"]
    # What a turn tells beside its question counts; the question's words do not.
    mixed = "We finished the bookshelf. Did you finally paint the wooden fence around the garden?"
    assert told_words(mixed, tokenize(mixed)) == 2
    # German: verbs and adjectives count as told words too (the themes keep only the nouns).
    german = "Ich habe endlich das hölzerne Bücherregal für unser Wohnzimmer fertig gebaut, drei verregnete Wochenenden lang."
    assert told_words(german, tokenize(german)) == DETAIL_WORDS
    assert analyze_text(german, AS_OF).cues["detailed"]


def test_an_answer_to_the_other_speakers_question_is_a_cue() -> None:
    asked = "Where did you and Anna go hiking last weekend?"
    assert answered_question("assistant", asked, "user") == asked
    assert answered_question("user", asked, "user") == ""  # one's own question, asked again or continued
    assert answered_question("assistant", "We went hiking last weekend.", "user") == ""  # no question
    assert answered_question("assistant", "", "user") == ""
    # A question before the turn's last sentence asks too; a "?" inside a link does not.
    mid = "Ah, they're adorable! What are their names? Pets sure bring so much joy!"
    assert answered_question("assistant", mid, "user") == mid
    assert answered_question("assistant", "The form is at https://example.org/?form=1 now.", "user") == ""
    assert answered_question("assistant", "You did what?!", "user") == "You did what?!"
    assert answered_question("assistant", "Where to? ", "user") == "Where to? "  # as is_question reads it
    reply = "Up to the lake behind the village."
    plain = analyze_text(reply, AS_OF)
    answer = analyze_text(reply, AS_OF, answers=True)
    assert not plain.cues["answer"] and answer.cues["answer"]
    assert (plain.salienz, answer.salienz) == (0.3, 0.7)  # no cue: 0.3; answering what was asked: HIGH by itself
    told = "We walked up to the lake behind the village."
    assert (analyze_text(told, AS_OF).salienz, analyze_text(told, AS_OF, answers=True).salienz) == (0.55, 0.95)
    assert analyze_text("ok", AS_OF, answers=True).salienz == 0.1  # nothing told: below the gate all the same


def test_analyze_text_emotion_and_imperative() -> None:
    findings = analyze_text("Merk dir bitte: ich habe furchtbare Angst vor dem Zahnarzt!", AS_OF)
    assert findings.intentionen == ["anweisung"]
    assert findings.emotion == "angst"
    assert findings.cues["importance"] and findings.cues["emotional"] and findings.cues["personal"]
    assert findings.arousal == pytest.approx(0.5)
    assert findings.dimension == "gesundheit"


def test_small_talk_falls_below_the_gate() -> None:
    findings = analyze_text("ok, danke", AS_OF)
    assert findings.themen == []
    assert findings.dimension == "allgemein"  # never empty: the pipeline requires a dimension
    assert findings.salienz == 0.1


def test_english_conversation_words_are_no_themes() -> None:
    # Verbs of saying and evaluations name no topic; as themes they would reinforce every
    # entry that also "said" or "sounded lovely" (SPEC §4.4).
    assert analyze_text("That sounds lovely. How did you feel about it?", AS_OF).themen == []
    findings = analyze_text("Yesterday Tom asked me about hiking and the mountains.", AS_OF)
    assert findings.themen == ["tom", "hiking", "mountains"]
    assert analyze_text("Vielleicht erzählt Anna vom Zahnarzt.", AS_OF).themen == ["anna", "zahnarzt"]


def test_a_question_that_points_back_has_no_subject() -> None:
    # "one" stands for something said before, like "ones" (SPEC §11: such a question gets no anchors).
    assert not has_subject("What about that one?")
    assert not has_subject("Did you do it together?")
    assert has_subject("What about the other dog?")
    assert has_subject("Which one of the hiking trails did you like?")


NEW_YEAR = datetime(2026, 1, 2, 15, 0, tzinfo=UTC)
"""A Friday two days into a year: relative dates cross the month and the year boundary."""


@pytest.mark.parametrize(
    ("text", "zeitpunkt", "praezision"),
    [
        ("I went to a meeting yesterday", day(2026, 1, 1), "tag"),
        ("vorgestern war Silvester", day(2025, 12, 31), "tag"),
        ("two weeks ago we moved", day(2025, 12, 15), "woche"),
        ("vor zwei Wochen sind wir umgezogen", day(2025, 12, 15), "woche"),
        ("a few days ago I saw her", day(2025, 12, 30), "tag"),
        ("vor 10 Tagen kam der Brief", day(2025, 12, 23), "tag"),
        ("last month I quit my job", day(2025, 12, 1), "monat"),
        ("letzten Monat habe ich gekündigt", day(2025, 12, 1), "monat"),
        ("vor drei Monaten war ich in Rom", day(2025, 10, 1), "monat"),
        ("last week was hard", day(2025, 12, 22), "woche"),
        ("last weekend was fun", day(2025, 12, 27), "tag"),
        ("letztes Wochenende waren wir wandern", day(2025, 12, 27), "tag"),
        ("last year we went to Spain", day(2025, 1, 1), "jahr"),
        ("vor einem Jahr haben wir geheiratet", day(2025, 1, 1), "jahr"),
        ("next Friday is the party", day(2026, 1, 9), "tag"),
        ("nächsten Monat ziehe ich um", day(2026, 2, 1), "monat"),
        ("in two months we fly", day(2026, 3, 1), "monat"),
        ("in 3 Tagen fliege ich", day(2026, 1, 5), "tag"),
    ],
)
def test_relative_dates_resolve_across_month_and_year_boundaries(text: str, zeitpunkt: datetime, praezision: str) -> None:
    """SPEC §11: relative dates become timeline references resolved against the turn's own time."""
    mention = find_dated_mention(text, NEW_YEAR)
    assert mention is not None, text
    assert (mention.zeitpunkt, mention.praezision) == (zeitpunkt, praezision)


def test_english_sentence_starts_and_contractions_are_no_new_entities() -> None:
    """English capitalises every sentence's first word: "Wow", "Glad", "I'm" name nobody (issue: analyzer)."""
    found = find_mentions("Wow, Caroline! I'm so glad. It's Oliver's birthday on Fri. Glad you met Ed Sheeran.")
    assert found.candidates == {"Caroline", "Oliver", "Ed Sheeran"}
    assert "I'm" not in found.mentions and "It's" not in found.mentions and "Fri" not in found.mentions
    assert "Wow" in found.mentions  # looked up (a known entity stays one), never created
    # A sentence-initial word that also appears mid-sentence is a name.
    assert "Melanie" in find_mentions("Melanie painted a lake. I love what Melanie paints.").candidates


def test_english_contractions_are_no_themes_and_name_their_host() -> None:
    """A clitic stands for its host word (docs/decisions.md "A contraction is its host word"): "I'm" is
    first person, "it's" / "that's" / "can't" are function words, "Oliver's" is about Oliver."""
    findings = analyze_text("I'm thrilled to adopt. It'll be tough, but that's life and I can't wait!", AS_OF)
    assert findings.themen == ["thrilled", "adopt", "tough", "life", "wait"]
    assert findings.cues["personal"]  # "I'm" is the first person, as "I am" would be
    assert analyze_text("Oliver's bike isn't new.", AS_OF).themen == ["oliver", "bike", "new"]
    # The typographic apostrophe is the same clitic; a word with an inner apostrophe stays whole.
    curly = analyze_text("We’ve painted the O'Neill house, they’d said.", AS_OF)
    assert curly.cues["personal"] and curly.themen == ["painted", "o'neill", "house"]
    # Contractions alone tell nothing: below the store gate, like any turn without a content word.
    assert analyze_text("That's it, isn't it? I'd say you're right.", AS_OF).salienz == 0.1


def test_contractions_count_neither_as_told_words_nor_as_questions_subject() -> None:
    text = "It's what I've done, I'm sure that's it, they'd agree, we'll see, you're right."
    assert told_words(text, tokenize(text)) == 2  # "done", "agree"; every contraction is a function word
    assert not has_subject("What's that?")
