"""The Confluence client against the local Confluence server, through the real atlassian-python-api."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from atlassian import Confluence
from requests import HTTPError

from tests.support.fake_confluence import FakeConfluence, FakePage, tree_wiki
from threadwise.connectors.confluence import (
    PAGE_NOT_FOUND,
    ConfluenceAccessError,
    ConfluenceClient,
    ConfluenceError,
    ConfluenceSettings,
    ConfluenceUnavailableError,
)
from threadwise.connectors.scope import SpaceScope
from threadwise.core.types import Page, PageFailure

FAST = {"backoff_s": 0.01, "max_wait_s": 0.2, "max_retries": 3, "timeout": 5.0}


@pytest.fixture
def dc() -> Iterator[FakeConfluence]:
    """Data Center behind a context path, small result pages so every listing pages."""
    pages = tree_wiki(extra_pages=25) + [
        FakePage(id="900", space="SECRET", title="Salaries", body="<p>x</p>")
    ]
    with FakeConfluence(pages=pages, context_path="/confluence", max_limit=10) as fake:
        yield fake


def dc_client(fake: FakeConfluence, **overrides: object) -> ConfluenceClient:
    settings = {"url": fake.url, "personal_token": "pat-secret", **FAST, **overrides}
    return ConfluenceClient(settings=ConfluenceSettings(**settings))  # type: ignore[arg-type]


def test_listing_pages_through_next_links_keeps_the_context_path(dc: FakeConfluence) -> None:
    refs = dc_client(dc).list_pages("DOCS")
    assert len(refs) == 31 and len({r.id for r in refs}) == 31
    listing_calls = [r for r in dc.requests if r.path == "/rest/api/content"]
    assert len(listing_calls) == 4 and all(r.status == 200 for r in listing_calls)
    on_call = next(r for r in refs if r.id == "113")
    assert on_call.ancestor_ids == ("100", "110", "112")
    assert on_call.ancestors == ("Home", "Team", "Policies")
    assert on_call.version == 1


def test_the_library_own_paging_drops_the_context_path(dc: FakeConfluence) -> None:
    """The pitfall our client avoids (atlassian-python-api 5.0.5): page two goes to the site root."""
    library = Confluence(dc.url, token="pat-secret")
    with pytest.raises(HTTPError):
        list(library.get_all_pages_from_space("DOCS", limit=10))
    assert [r.status for r in dc.requests] == [200, 404]


def test_the_library_cloud_class_lacks_get_page_by_id() -> None:
    """The other pitfall: `Confluence(cloud=True)` is a different class; our client does not rely on it."""
    library = Confluence("https://acme.atlassian.net", username="a@acme.com", password="t", cloud=True)
    with pytest.raises(AttributeError):
        library.get_page_by_id("1")


def cloud_client(fake: FakeConfluence, **overrides: object) -> ConfluenceClient:
    site = fake.url.removesuffix("/wiki")  # as users give it: the site, without /wiki
    settings = {"url": site, "username": "alice@example.com", "api_token": "api-token", "cloud": True}
    return ConfluenceClient(settings=ConfluenceSettings(**{**settings, **FAST, **overrides}))  # type: ignore[arg-type]


def test_cloud_reads_api_v2_with_cursor_paging_and_basic_auth() -> None:
    with FakeConfluence(
        pages=tree_wiki(extra_pages=5), context_path="/wiki", max_limit=4, flavor="cloud"
    ) as fake:
        client = cloud_client(fake)
        assert client.settings.base_url == fake.url
        assert [s.key for s in client.list_spaces()] == ["DOCS"]
        refs = {r.id: r for r in client.list_pages("DOCS")}
        assert len(refs) == 11
        assert refs["113"].ancestor_ids == ("100", "110", "112")
        assert refs["113"].ancestors == ("Home", "Team", "Policies")
        listing_calls = [r for r in fake.requests if r.path.endswith("/pages")]
        assert len(listing_calls) == 3  # 4 + 4 + 3, through cursors that carry the /wiki context path
        fake.edit_page("113", body="<p>Within 10 minutes.</p>")
        page = client.get_page("113", ancestors=refs["113"].ancestors)
        assert isinstance(page, Page)
        assert (page.space, page.title, page.version, page.labels) == ("DOCS", "On-call", 2, ("policy",))
        assert page.body == "<p>Within 10 minutes.</p>" and page.ancestors == ("Home", "Team", "Policies")
        assert page.url == f"{fake.url}/spaces/DOCS/pages/113"
        changed = client.pages_modified_since("DOCS", datetime.now(UTC), overlap=timedelta(hours=1))
        assert [(r.id, r.version) for r in changed] == [("113", 2)]
        assert client.pages_with_labels("DOCS", ["policy"]) == {"113"}
        assert client.get_space("NOPE") is None
        assert 410 not in {r.status for r in fake.requests}  # no deprecated v1 read was used


def test_get_page_returns_body_version_breadcrumb_labels_and_web_url(dc: FakeConfluence) -> None:
    dc.edit_page("113", body="<p>Answer within 10 minutes.</p>")
    page = dc_client(dc).get_page("113", space="DOCS")
    assert isinstance(page, Page)
    assert page.body == "<p>Answer within 10 minutes.</p>"
    assert (page.id, page.space, page.title, page.version) == ("113", "DOCS", "On-call", 2)
    assert page.ancestors == ("Home", "Team", "Policies") and page.labels == ("policy",)
    assert page.url == f"{dc.url}/spaces/DOCS/pages/113"
    assert page.last_modified.startswith(str(datetime.now(UTC).year))


def test_public_base_gives_the_web_url(tmp_path: object) -> None:
    page = FakePage(
        id="7", space="DC", title="T", body="<p>b</p>", url="https://wiki.example.com/x/pages/7/T"
    )
    with FakeConfluence(pages=[page], public_base="https://wiki.example.com/x") as fake:
        got = dc_client(fake).get_page("7")
        assert isinstance(got, Page) and got.url == "https://wiki.example.com/x/pages/7/T"


def test_missing_page_is_a_failure_value(dc: FakeConfluence) -> None:
    got = dc_client(dc).get_page("4242", space="DOCS")
    assert isinstance(got, PageFailure) and "not found" in got.reason


def test_429_honours_retry_after_then_succeeds(dc: FakeConfluence) -> None:
    dc.faults.next_statuses = [429, 429]
    dc.faults.retry_after = "0.05"
    started = datetime.now(UTC)
    page = dc_client(dc).get_page("111")
    assert isinstance(page, Page)
    assert [r.status for r in dc.requests] == [429, 429, 200]
    assert datetime.now(UTC) - started >= timedelta(seconds=0.1)  # waited as told (a lower bound only)


def test_5xx_backs_off_and_gives_up_after_bounded_retries(dc: FakeConfluence) -> None:
    dc.faults.next_statuses = [500, 503, 502]
    assert isinstance(dc_client(dc).get_page("111"), Page)  # three failures, the fourth try works
    dc.faults.next_statuses = [500] * 10
    failure = dc_client(dc, max_retries=2).get_page("111")
    assert isinstance(failure, PageFailure) and "HTTP 500" in failure.reason
    with pytest.raises(ConfluenceUnavailableError, match="kept failing for the list of spaces"):
        dc_client(dc, max_retries=2).list_spaces()


def test_timeouts_are_retried_then_reported(dc: FakeConfluence) -> None:
    dc.faults.delay_s = 0.5
    with pytest.raises(ConfluenceUnavailableError, match="Timeout"):
        dc_client(dc, timeout=0.05, max_retries=1).list_spaces()


def test_wrong_token_and_forbidden_space_give_clear_errors(dc: FakeConfluence) -> None:
    with pytest.raises(ConfluenceAccessError, match="rejected the credentials"):
        dc_client(dc, personal_token="wrong").list_spaces()
    dc.faults.forbidden_spaces = {"SECRET"}
    with pytest.raises(ConfluenceAccessError, match="no access to space SECRET"):
        dc_client(dc).list_pages("SECRET")


def test_cloud_errors_name_the_space() -> None:
    with FakeConfluence(pages=tree_wiki(), context_path="/wiki", flavor="cloud") as fake:
        fake.faults.forbidden_spaces = {"DOCS"}
        with pytest.raises(ConfluenceAccessError, match="no access to space DOCS"):
            cloud_client(fake).list_pages("DOCS")
        with pytest.raises(ConfluenceAccessError, match="rejected the credentials"):
            cloud_client(fake, api_token="wrong").list_spaces()


def test_unknown_space_is_none_and_wrong_url_is_explained(dc: FakeConfluence) -> None:
    assert dc_client(dc).get_space("NOPE") is None
    assert dc_client(dc).get_space("DOCS") is not None
    wrong = ConfluenceClient(
        settings=ConfluenceSettings(url=dc.url.removesuffix("/confluence"), personal_token="x")
    )
    with pytest.raises(ConfluenceError, match="context path"):
        wrong.list_spaces()


def test_cql_changes_use_the_overlap_for_the_user_time_zone() -> None:
    """CQL reads dates in the user's zone: west of UTC, a cursor in UTC lies in the future for the server."""
    with FakeConfluence(pages=tree_wiki(), user_utc_offset=timedelta(hours=-10)) as fake:
        client = dc_client(fake)
        cursor = datetime.now(UTC) - timedelta(minutes=5)
        fake.edit_page("111", body="<p>Moved to Tuesdays.</p>")
        assert client.pages_modified_since("DOCS", cursor, overlap=timedelta(0)) == []
        changed = client.pages_modified_since("DOCS", cursor, overlap=timedelta(hours=26))
        assert [(r.id, r.version) for r in changed] == [("111", 2)]


def test_settings_from_env_detect_cloud_and_hide_secrets() -> None:
    assert ConfluenceSettings.from_env({}) is None
    cloud = ConfluenceSettings.from_env(
        {
            "CONFLUENCE_URL": "https://acme.atlassian.net",
            "CONFLUENCE_USERNAME": "a@acme.com",
            "CONFLUENCE_API_TOKEN": "s3cret-api",
        }
    )
    assert cloud is not None and cloud.is_cloud and cloud.base_url == "https://acme.atlassian.net/wiki"
    dc = ConfluenceSettings.from_env(
        {"CONFLUENCE_URL": "https://h/confluence/", "CONFLUENCE_PERSONAL_TOKEN": "s3cret-pat"}
    )
    assert dc is not None and not dc.is_cloud and dc.base_url == "https://h/confluence"
    assert "s3cret" not in repr(cloud) + repr(dc) + repr(ConfluenceClient(settings=dc))
    with pytest.raises(ConfluenceError, match="CONFLUENCE_PERSONAL_TOKEN"):
        ConfluenceSettings.from_env({"CONFLUENCE_URL": "https://h"})


def test_scope_parent_and_labels() -> None:
    with FakeConfluence(pages=tree_wiki()) as fake:
        client = dc_client(fake)
        refs = {r.id: r for r in client.list_pages("DOCS")}
        labelled = client.pages_with_labels("DOCS", ["policy", "nothing-has-this"])
    assert labelled == {"113"}
    team = SpaceScope.of("DOCS", parent_id="110", exclude_labels=["policy"])
    assert sorted(pid for pid, r in refs.items() if team.includes(r, labelled=labelled)) == [
        "110",
        "111",
        "112",
    ]
    assert sum(SpaceScope.of("DOCS").includes(r) for r in refs.values()) == 6
    assert team.describe() == "DOCS under page 110 without labels policy"


def test_cloud_restrictions_above_a_folder_reach_the_pages_below_it() -> None:
    pages = tree_wiki() + [
        FakePage(id="130", space="DOCS", title="Plans", body="", parent_id="110", kind="folder"),
        FakePage(id="131", space="DOCS", title="Roadmap", body="<p>Q3: ship it.</p>", parent_id="130"),
        FakePage(id="132", space="DOCS", title="Q4", body="<p>Q4: rest.</p>", parent_id="131"),
        FakePage(id="140", space="DOCS", title="Old", body="<p>gone</p>", parent_id="100", status="archived"),
    ]
    with FakeConfluence(pages=pages, context_path="/wiki", flavor="cloud") as fake:
        client = cloud_client(fake)
        fake.restrict("110", groups=["leads"])  # Team, above the folder
        refs = {r.id: r for r in client.list_pages("DOCS")}
        assert "130" not in refs and "140" not in refs  # folders are no pages; archived pages are left out
        assert refs["132"].ancestor_ids == ("100", "110", "130", "131")
        assert refs["132"].ancestors == ("Home", "Team", "Plans", "Roadmap")
        restricted = {r.page_id: r.reason for r in client.restricted_pages(list(refs.values()), space="DOCS")}
        assert {"131", "132"} <= restricted.keys() and "'Team'" in restricted["132"]
        assert client.get_page("140") == PageFailure("140", "", PAGE_NOT_FOUND)  # asked for current only

        fake.faults.broken_pages = {"130"}  # the folder cannot be read: the listing fails, never "open"
        with pytest.raises(ConfluenceError, match="folder 130"):
            client.list_pages("DOCS")


def test_a_page_names_its_last_editor_on_data_center_and_cloud() -> None:
    """Data Center's `version.by` gives the display name; Cloud v2 only the account id, read as a name once."""
    with FakeConfluence(pages=tree_wiki(), context_path="/confluence") as fake:
        fake.people.add_user("jane", "jane@example.com")
        fake.edit_page("113", body="<p>Answer within 10 minutes.</p>", by="jane")
        client = dc_client(fake)
        on_call, home = client.get_page("113"), client.get_page("100")
        assert isinstance(on_call, Page) and on_call.last_editor == "Jane"
        assert isinstance(home, Page) and home.last_editor == ""  # the reply names nobody
        before = on_call.content_hash
        assert replace(on_call, last_editor="Bob").content_hash == before  # the editor is not content
    with FakeConfluence(pages=tree_wiki(), context_path="/wiki", flavor="cloud") as fake:
        fake.people.add_user("jane", "jane@example.com")
        for pid in ("111", "113"):
            fake.edit_page(pid, by="jane")
        fake.edit_page("112", by="gone")  # a user Confluence cannot read: no name, and the page still syncs
        client = cloud_client(fake)
        pages = [client.get_page(pid, space="DOCS") for pid in ("111", "113", "112", "100")]
        assert [p.last_editor for p in pages if isinstance(p, Page)] == ["Jane", "Jane", "", ""]
        user_reads = [r for r in fake.requests if r.path == "/rest/api/user"]
        assert [r.status for r in user_reads] == [200, 404]  # once per account id
