from threadwise.core.completion import PastTurn
from threadwise.core.history_completion import HistoryCompleter, leans_on_history

PREVIOUS = PastTurn(
    question="What was the BIOS version used for Dell Optiplex 7040 in the OpenXT 9.0 measurement tests?",
    completed_question="What was the BIOS version used for Dell Optiplex 7040 in the OpenXT 9.0 measurement tests?",
    answer="1.14.0",
)


def test_first_turn_passes_through() -> None:
    c = HistoryCompleter().complete("How do I build OpenXT?", [])
    assert c.question == "How do I build OpenXT?" and c.method == "first turn"


def test_follow_up_carries_the_previous_topic() -> None:
    c = HistoryCompleter().complete("And what about TPM?", [PREVIOUS])
    assert c.question.startswith("And what about TPM?")
    for word in ("Dell", "Optiplex", "7040", "OpenXT", "9.0", "measurement"):
        assert word in c.question
    assert c.question.count("TPM") == 1


def test_german_follow_up() -> None:
    c = HistoryCompleter().complete("Und was ist mit TPM?", [PREVIOUS])
    assert "Optiplex" in c.question and c.method == "history"


def test_self_contained_question_is_a_topic_shift() -> None:
    q = "Which OpenXT 9.0.2 tests did the Dell 9010 pass for the legacy system?"
    assert not leans_on_history(q)
    assert HistoryCompleter().complete(q, [PREVIOUS]).question == q


def test_pronoun_leans_on_history() -> None:
    assert leans_on_history("Who maintains it?")
    assert leans_on_history("Wer pflegt diese Seite?")
