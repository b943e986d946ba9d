from threadwise.core.complete.history import SEPARATOR, HistoryCompleter
from threadwise.core.types import PastTurn


def turn(q: str) -> PastTurn:
    return PastTurn(question=q, completed_question=q, answer="")


def test_first_turn_passes_through() -> None:
    c = HistoryCompleter().complete("How do I build OpenXT?", [])
    assert c.question == "How do I build OpenXT?" and c.method == "first turn"


def test_follow_up_carries_the_topic() -> None:
    first = "What was the BIOS version used for Dell Optiplex 7040 in the OpenXT 9.0 measurement tests?"
    c = HistoryCompleter().complete("And what about TPM?", [turn(first)])
    assert c.question == f"And what about TPM?{SEPARATOR}{first}"


def test_keeps_the_opening_question_and_the_recent_ones() -> None:
    history = [turn(f"q{i}") for i in range(1, 6)]
    c = HistoryCompleter(recent=2).complete("now?", history)
    assert c.question.split(SEPARATOR) == ["now?", "q5", "q4", "q1"]
    assert "3 earlier" in c.method


def test_german_follow_up() -> None:
    c = HistoryCompleter().complete(
        "Und was ist mit TPM?", [turn("Welches BIOS hatte der Dell Optiplex 7040?")]
    )
    assert "Optiplex" in c.question and c.question.startswith("Und was ist mit TPM?")


def test_history_remembers_the_pages_of_the_first_three_sources_once() -> None:
    from threadwise.core.complete.conversation import conversation_history, past_turn

    answered = past_turn(
        question="and when?",
        completed_question="and when? ← who?",
        answer="Friday [Source 1]",
        source_page_ids=["p1", "p1", "p2", "p3", "p4"],
    )
    assert answered.page_ids == ("p1", "p2")
    history = conversation_history([answered], said=["the build is red", "any idea?"])
    assert [t.question for t in history] == ["the build is red", "any idea?", "and when?"]
    assert history[0] == PastTurn(
        question="the build is red", completed_question="the build is red", answer=""
    )
