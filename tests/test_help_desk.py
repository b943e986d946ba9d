"""Which top-level messages auto mode answers, and the texts of calling a channel's experts in."""

from __future__ import annotations

import pytest

from threadwise.chat.help_desk import escalation_text, is_question
from threadwise.db.channel_modes import Expert
from threadwise.slack.mrkdwn import SLACK

QUESTIONS = [
    "How do I request a new laptop?",
    "how do I request a new laptop",
    "Where is the VPN guide",
    "<@U1> do you know where the VPN guide is?",
    "Wie beantrage ich einen neuen Laptop",
    "Gibt es eine Anleitung für das VPN?",
    "btw, what is TBOOT used for",
    "laptop policy?",
]
NOT_QUESTIONS = [
    "Thanks!",
    "Deployed v2.3 to staging today.",
    "how are you?",
    "Wie geht's?",
    "?",
    "lol",
    "The VPN guide is at https://wiki.example/vpn",
    "Danke, hat geklappt.",
]


@pytest.mark.parametrize("text", QUESTIONS)
def test_questions_are_answered_in_auto_mode(text: str) -> None:
    assert is_question(text)


@pytest.mark.parametrize("text", NOT_QUESTIONS)
def test_statements_and_chit_chat_are_not(text: str) -> None:
    assert not is_question(text)


def test_the_call_for_help_names_the_experts_the_asker_and_the_question() -> None:
    text = escalation_text(
        question="Who approves <b>budget</b> requests?",
        asker="U1",
        experts=[Expert("user", "U7", "ana"), Expert("group", "S1", "help-desk")],
        turn=None,
        markup=SLACK,
    )
    assert text.startswith("<@U7>, <!subteam^S1>: <@U1> still needs help")
    assert "&lt;b&gt;budget&lt;/b&gt;" in text and "Mark resolved" in text
