"""Block Kit rendering and mrkdwn helpers (pure functions), and `doctor`'s Slack checks against the fake Web API."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st
from slack_sdk.models.blocks import Block

from tests.support.fake_slack import FakeSlack
from threadwise.chat.conversations import SourceView, TurnView
from threadwise.chat.doctor import all_ok, render
from threadwise.slack import blocks
from threadwise.slack.actions import COMMAND
from threadwise.slack.doctor import slack_checks
from threadwise.slack.mrkdwn import SECTION_LIMIT, link, markdown_to_mrkdwn, plain_question, split_mrkdwn
from threadwise.slack.settings import BOT_EVENTS, BOT_SCOPES, SlackSettings


def source(
    number: int, page: str, *, url: str = "", modified: str = "2024-05-03T10:00:00Z", outdated: bool = False
) -> SourceView:
    return SourceView(
        number=number,
        evidence_id=f"{page}:{number}",
        page_id=page,
        title=f"Page {page} | draft",
        url=url or f"https://wiki.example/p/{page}?a=1&b=2",
        space="ENG",
        kind="passage",
        label=f"Page {page}",
        text="…",
        last_modified=modified,
        cited=True,
        possibly_outdated=outdated,
    )


def turn(
    answer: str, *, sources: list[SourceView], cited: list[int], follow_ups: list[str] | None = None
) -> TurnView:
    return TurnView(
        turn_id=7,
        conversation_id=1,
        question="q",
        completed_question="q",
        answer=answer,
        not_found=False,
        error=None,
        sources=sources,
        cited=cited,
        follow_ups=follow_ups or [],
        timings_ms={},
    )


def valid(message: blocks.Message) -> bool:
    assert len(message["blocks"]) <= 50
    for raw in message["blocks"]:
        parsed = Block.parse(raw)
        assert parsed is not None, raw
        parsed.to_dict()  # raises on Slack's limits
    return True


def test_citations_become_links_and_sources_are_grouped_by_page() -> None:
    t = turn(
        "Use **the portal** [Source 1, 3]; see [Source 2]. Bogus [Source 9].",
        sources=[source(1, "a"), source(2, "b"), source(3, "a")],
        cited=[1, 2, 3],
    )
    message = blocks.answer_message(t)
    assert valid(message)
    body = message["blocks"][0]["text"]["text"]
    assert body.startswith(
        "Use *the portal* <https://wiki.example/p/a?a=1&b=2|[1]><https://wiki.example/p/a?a=1&b=2|[3]>"
    )
    assert "[9]" not in body and "Source" not in body
    sources = message["blocks"][1]["elements"][0]["text"]
    assert "[1, 3] <https://wiki.example/p/a?a=1&b=2|Page a ¦ draft> · ENG · <!date^" in sources
    assert message["text"].startswith("Use **the portal**;")  # notification: citations stripped


def test_every_source_line_shows_its_date_and_an_old_page_is_marked() -> None:
    t = turn(
        "Old [Source 1], new [Source 2], undated [Source 3].",
        sources=[
            source(1, "a", outdated=True),
            source(2, "b", modified="2026-10-01T08:00:00Z"),
            source(3, "c", modified=""),
        ],
        cited=[1, 2, 3],
    )
    message = blocks.answer_message(t)
    assert valid(message)
    lines = message["blocks"][1]["elements"][0]["text"].split("\n")[1:]
    stamp = int(datetime(2024, 5, 3, 10, tzinfo=UTC).timestamp())
    assert lines[0].endswith(
        f"· ENG · <!date^{stamp}^updated {{date_short}}|updated 2024-05-03> · {blocks.OUTDATED}"
    )
    assert lines[1].endswith("|updated 2026-10-01>") and "outdated" not in lines[1]
    assert lines[2].endswith("|Page c ¦ draft> · ENG")  # no date known: none shown, never called outdated
    full = blocks.full_answer_modal(t)["blocks"][-1]["elements"][0]["text"]
    assert full.split("\n")[1:] == lines


def test_markdown_is_turned_into_mrkdwn_and_code_is_kept() -> None:
    text = "# Steps\n* open <b>this</b> & [the form](https://x.example/f)\n`a **b**`\n~~old~~"
    assert markdown_to_mrkdwn(text) == (
        # a link in the text shows its address: only links the bot builds may hide theirs behind a label
        "*Steps*\n• open &lt;b&gt;this&lt;/b&gt; &amp; the form (https://x.example/f)\n`a **b**`\n~old~"
    )
    assert link("javascript:alert(1)", "x") == "x"


def test_plain_question_removes_the_bot_and_undoes_slack_markup() -> None:
    text = "<@UBOT> is <https://a.example|this page> ok for <@U2> in <#C1|general>? a &lt; b"
    assert plain_question(text, bot_user_id="UBOT") == "is this page ok for @U2 in #general? a < b"


@given(st.text(alphabet=st.sampled_from(list("ab cd\n`*<>&")), max_size=12000))
def test_split_mrkdwn_keeps_every_piece_within_a_section(text: str) -> None:
    pieces = split_mrkdwn(text)
    assert all(len(p) <= SECTION_LIMIT for p in pieces)


def test_split_mrkdwn_never_cuts_a_link() -> None:
    url = "<https://wiki.example/" + "x" * 60 + "|[1]>"
    text = " ".join(["word"] * 30 + [url]) * 80
    for piece in split_mrkdwn(text, limit=500):
        assert piece.count("<") == piece.count(">")


def test_a_huge_answer_fits_slacks_limits() -> None:
    t = turn(
        "x" * 20000 + " [Source 1]",
        sources=[source(1, "a")],
        cited=[1],
        follow_ups=["A very long follow-up question " * 10, "b"],
    )
    message = blocks.answer_message(t)
    assert valid(message)
    assert any(
        e.get("action_id") == blocks.FULL_ANSWER for b in message["blocks"] for e in b.get("elements", [])
    )


def test_doctor_says_what_is_wrong_with_the_slack_tokens() -> None:
    with FakeSlack() as slack:
        good = SlackSettings(bot_token=slack.token, app_token=slack.app_token, api_url=slack.api_url)
        checks = slack_checks(good, http=False)
        assert all_ok(checks), render(checks)
        assert "signed in as @threadwise" in render(checks)

        bad = SlackSettings(bot_token="xoxb-wrong", app_token="xapp-wrong", api_url=slack.api_url)
        report = render(slack_checks(bad, http=False))
        assert "SLACK_BOT_TOKEN was refused by Slack (invalid_auth)" in report
        assert "SLACK_APP_TOKEN was refused by Slack (invalid_auth)" in report

        http = render(slack_checks(SlackSettings(bot_token="", api_url=slack.api_url), http=True))
        assert "SLACK_BOT_TOKEN is not set" in http and "SLACK_SIGNING_SECRET is not set" in http


def test_doctor_names_missing_scopes() -> None:
    with FakeSlack(scopes=frozenset({"chat:write", "commands"})) as slack:
        settings = SlackSettings(bot_token=slack.token, app_token=slack.app_token, api_url=slack.api_url)
        report = render(slack_checks(settings, http=False))
        assert (
            "lacks the scopes app_mentions:read, assistant:write, channels:history" in report
            and "reinstall" in report
        )


def test_manifest_asks_for_exactly_what_the_app_uses() -> None:
    manifest = yaml.safe_load((Path(__file__).resolve().parents[1] / "manifest.yml").read_text())
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == BOT_SCOPES
    assert set(manifest["settings"]["event_subscriptions"]["bot_events"]) == BOT_EVENTS
    assert [c["command"] for c in manifest["features"]["slash_commands"]] == [COMMAND]
    assert (
        manifest["settings"]["socket_mode_enabled"] is True
        and manifest["settings"]["interactivity"]["is_enabled"]
    )
    assert (
        manifest["features"]["app_home"]["home_tab_enabled"]
        and manifest["features"]["app_home"]["messages_tab_enabled"]
    )
    assert len(manifest["display_information"]["long_description"]) >= 175
