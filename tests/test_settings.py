"""One reading of yes/no and list settings, the same in every front end and connector."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadwise.connectors.confluence_rest import ConfluenceSettings
from threadwise.errors import ConfigError
from threadwise.settings import env_flag, env_list, load_settings
from threadwise.slack.settings import SlackSettings
from threadwise.teams.settings import TeamsSettings


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", True), ("on", True), ("YES", True), (" 1 ", True), ("off", False), ("No", False), ("0", False)],
)
def test_every_yes_no_setting_reads_the_same_words(value: str, expected: bool) -> None:
    assert env_flag({"X": value}, "X", True) is expected
    env = {
        "THREADWISE_SLACK_FOLLOW_UPS": value,
        "THREADWISE_TEAMS_FOLLOW_UPS": value,
        "CONFLUENCE_URL": "https://wiki.example.com",
        "CONFLUENCE_PERSONAL_TOKEN": "pat",
        "CONFLUENCE_VERIFY_SSL": value,
    }
    assert SlackSettings.from_env(env).follow_ups_without_mention is expected
    assert TeamsSettings.from_env(env).follow_ups_without_mention is expected
    confluence = ConfluenceSettings.from_env(env)
    assert confluence is not None and confluence.verify is expected
    assert load_settings(env=env).flag("THREADWISE_SLACK_FOLLOW_UPS", True) is expected


def test_a_typo_in_a_yes_no_setting_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match="THREADWISE_SLACK_WORKSPACE_ADMINS='ture'"):
        SlackSettings.from_env({"THREADWISE_SLACK_WORKSPACE_ADMINS": "ture"})


def test_confluence_cloud_is_guessed_from_the_url_unless_set() -> None:
    url = {"CONFLUENCE_URL": "https://acme.atlassian.net/wiki", "CONFLUENCE_PERSONAL_TOKEN": "pat"}
    assert ConfluenceSettings.from_env(url).is_cloud  # type: ignore[union-attr]
    assert not ConfluenceSettings.from_env({**url, "CONFLUENCE_CLOUD": "off"}).is_cloud  # type: ignore[union-attr]


def test_lists_are_comma_separated_and_trimmed() -> None:
    assert env_list({"A": " U1, ,U2,"}, "A") == ("U1", "U2")
    assert env_list({}, "A") == ()
    assert SlackSettings.from_env({"THREADWISE_SLACK_ADMINS": "U1, U2"}).admin_user_ids == ("U1", "U2")
    assert TeamsSettings.from_env({"THREADWISE_TEAMS_ADMINS": "a ,b"}).admin_ids == ("a", "b")


def test_the_drain_on_shutdown_is_set_in_whole_seconds_and_never_negative(tmp_path: Path) -> None:
    assert load_settings(env={}, data_dir=tmp_path).drain_seconds == 15
    assert load_settings(env={"THREADWISE_DRAIN_SECONDS": "40"}, data_dir=tmp_path).drain_seconds == 40
    with pytest.raises(ConfigError, match="THREADWISE_DRAIN_SECONDS=-1 is a negative number of seconds"):
        load_settings(env={"THREADWISE_DRAIN_SECONDS": "-1"}, data_dir=tmp_path)
    with pytest.raises(ConfigError, match="THREADWISE_DRAIN_SECONDS='soon' is not a whole number"):
        load_settings(env={"THREADWISE_DRAIN_SECONDS": "soon"}, data_dir=tmp_path)
