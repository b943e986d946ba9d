"""Syncing spaces from the local Confluence into a real index and SQLite file, through the real client."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_confluence import FakeConfluence, FakePage, tree_wiki
from tests.support.sync_env import CountingEmbedder, SyncEnv, make_env
from threadwise.connectors.scope import SpaceScope
from threadwise.models.embedders import HashingEmbedder
from threadwise.sync.store import SyncStore

ROOT = Path(__file__).resolve().parents[1]
DOCS = SpaceScope.of("DOCS")


@pytest.fixture
def fake() -> Iterator[FakeConfluence]:
    with FakeConfluence(pages=tree_wiki(extra_pages=4), context_path="/confluence", max_limit=4) as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, fake: FakeConfluence) -> SyncEnv:
    return make_env(tmp_path, fake.url, embedder=CountingEmbedder(HashingEmbedder()))


def fetched(fake: FakeConfluence) -> list[str]:
    """Page ids whose content was served since the last call."""
    ids = sorted(fake.served_pages())
    fake.requests.clear()
    return ids


def test_full_then_incremental_with_nothing_changed(env: SyncEnv, fake: FakeConfluence) -> None:
    first = env.syncer.sync(DOCS)
    assert first.status == "ok", first.summary()
    assert (first.counts.pages, first.counts.added, first.counts.failed) == (10, 10, 0)
    assert set(env.index.page_states("DOCS")) == set(fake.pages)
    assert len(fetched(fake)) == 10

    embedded = env.index.embedder.calls  # type: ignore[attr-defined]
    second = env.syncer.sync(DOCS)
    assert second.status == "ok"
    assert (second.counts.unchanged, second.counts.added, second.counts.updated) == (10, 0, 0)
    assert fetched(fake) == []  # no page body downloaded
    assert env.index.embedder.calls == embedded  # type: ignore[attr-defined]  # nothing re-embedded
    runs = SyncStore(sessions=env.sessions).runs("DOCS")
    assert [r.status for r in runs] == ["ok", "ok"] and runs[0].duration_s is not None


def test_an_edit_re_embeds_only_that_page(env: SyncEnv, fake: FakeConfluence) -> None:
    env.syncer.sync(DOCS)
    fetched(fake)
    fake.edit_page("111", body="<p>We now meet on Tuesdays in room Galilei.</p>")
    report = env.syncer.sync(DOCS)
    assert (report.counts.updated, report.counts.unchanged) == (1, 9)
    assert fetched(fake) == ["111"]
    assert env.index.page_states()["111"].version == 2
    top = env.index.search_lexical("Galilei Tuesdays", k=1)
    assert top and top[0].evidence.page_id == "111"
    assert not env.index.search_lexical("Kepler", k=3) or all(
        "Kepler" not in h.evidence.text for h in env.index.search_lexical("Kepler", k=3)
    )


def test_renaming_a_parent_recontextualizes_its_descendants(env: SyncEnv, fake: FakeConfluence) -> None:
    env.syncer.sync(DOCS)
    before = env.index.page_states()
    fake.edit_page("110", title="Crew")  # the version of 110 moves, its children's do not
    report = env.syncer.sync(DOCS)
    assert report.counts.updated == 4  # Team itself, Meeting notes, Policies, On-call
    after = env.index.page_states()
    changed = {pid for pid in after if after[pid].content_hash != before[pid].content_hash}
    assert changed == {"110", "111", "112", "113"}
    assert after["113"].version == 1
    hits = env.index.search_lexical("Crew on-call engineer", k=5)
    assert any(h.evidence.page_id == "113" and "Crew" in h.evidence.context_text for h in hits)


def test_a_move_without_new_version_changes_the_breadcrumb(env: SyncEnv, fake: FakeConfluence) -> None:
    env.syncer.sync(DOCS)
    fetched(fake)
    fake.move_page("113", "100")  # On-call moves from Home > Team > Policies to Home
    report = env.syncer.sync(DOCS)
    assert report.counts.updated == 1 and fetched(fake) == ["113"]
    hit = env.index.search_lexical("on-call engineer pages", k=1)[0]
    assert "Policies" not in hit.evidence.context_text


def test_deleted_pages_leave_the_index(env: SyncEnv, fake: FakeConfluence) -> None:
    env.syncer.sync(DOCS)
    fake.delete_page("113")
    report = env.syncer.sync(DOCS)
    assert (report.counts.deleted, report.counts.pages) == (1, 9)
    assert "113" not in env.index.page_states()
    assert all(h.evidence.page_id != "113" for h in env.index.search_lexical("on-call engineer", k=10))


def test_scope_changes_remove_and_add_pages(env: SyncEnv, fake: FakeConfluence) -> None:
    env.syncer.sync(DOCS)
    team_only = SpaceScope.of("DOCS", parent_id="110", exclude_labels=["draft"])
    report = env.syncer.sync(team_only)
    assert report.counts.deleted == 6 and sorted(env.index.page_states()) == ["110", "111", "112", "113"]
    fake.set_labels("111", ["draft"])  # labels change without a new version
    assert env.syncer.sync(team_only).counts.deleted == 1
    fake.set_labels("111", [])
    assert env.syncer.sync(team_only).counts.added == 1
    assert "111" in env.index.page_states()


def test_new_pages_arrive_in_an_incremental_run(env: SyncEnv, fake: FakeConfluence) -> None:
    env.syncer.sync(DOCS)
    fake.add_page(
        FakePage(
            id="130",
            space="DOCS",
            title="Holidays",
            body="<p>Office closed on 24 December.</p>",
            parent_id="100",
        )
    )
    report = env.syncer.sync(DOCS)
    assert report.counts.added == 1 and "130" in env.index.page_states()


def test_faults_lose_nothing_and_fetch_nothing_twice(env: SyncEnv, fake: FakeConfluence) -> None:
    fake.faults.error_rate = 0.2
    fake.faults.retry_after = "0.01"
    report = env.syncer.sync(DOCS)
    assert report.status == "ok", report.summary()
    assert set(env.index.page_states()) == set(fake.pages)
    assert all(fake.fetch_count(pid) == 1 for pid in fake.pages)
    assert {r.status for r in fake.requests} >= {429, 500, 200}


def test_a_failing_page_is_reported_and_retried_next_time(env: SyncEnv, fake: FakeConfluence) -> None:
    fake.faults.broken_pages = {"112"}
    macro_only = '<ac:structured-macro ac:name="toc" ac:schema-version="1"/>'  # no text, no markup
    fake.add_page(FakePage(id="140", space="DOCS", title="Empty", body=macro_only, parent_id="100"))
    report = env.syncer.sync(DOCS)
    assert report.status == "partial" and report.counts.failed == 2 and report.counts.added == 9
    reasons = {f.page_id: f.reason for f in report.failures}
    assert "HTTP 500" in reasons["112"] and "unusable page" in reasons["140"]
    assert {f.title for f in report.failures} == {"Policies", "Empty"}
    run = SyncStore(sessions=env.sessions).last_run("DOCS")
    assert run is not None and run.status == "partial" and len(run.failures) == 2

    fake.faults.broken_pages = set()
    again = env.syncer.sync(DOCS)  # nothing modified, yet last run's failures are retried
    assert again.counts.added == 1 and again.counts.failed == 1  # the empty page stays unusable
    assert "112" in env.index.page_states()


def test_a_page_emptied_in_confluence_stops_answering(env: SyncEnv, fake: FakeConfluence) -> None:
    env.syncer.sync(DOCS)
    before = env.index.page_states()["111"].evidence_count
    fake.edit_page("111", body="")
    report = env.syncer.sync(DOCS)
    assert report.status == "ok" and report.counts.updated == 1 and report.counts.failed == 0
    assert before > 0 and env.index.page_states()["111"].evidence_count == 0  # empty is a valid page
    assert all(h.evidence.page_id != "111" for h in env.index.search_lexical("page 111", 20))


def test_an_exception_midway_leaves_old_state_and_the_next_run_finishes(
    env: SyncEnv, fake: FakeConfluence
) -> None:
    env.syncer.sync(DOCS)
    for pid in ("111", "112", "113"):
        fake.edit_page(pid, body=f"<p>Revised text of page {pid} with keyword zebra.</p>")

    class Exploding(CountingEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            if self.calls >= 1:
                raise RuntimeError("embedding model crashed")
            return super().embed(texts)

    env.index.embedder = Exploding(HashingEmbedder())
    env.syncer.fetch_workers = 1
    env.syncer.batch_pages = 1  # one page per call to the embedder: the second page's call explodes
    with pytest.raises(RuntimeError, match="crashed"):
        env.syncer.sync(DOCS)
    versions = {pid: s.version for pid, s in env.index.page_states().items()}
    assert sorted(versions[p] for p in ("111", "112", "113")) == [1, 1, 2]
    assert SyncStore(sessions=env.sessions).last_run("DOCS").status == "failed"  # type: ignore[union-attr]

    env.index.embedder = CountingEmbedder(HashingEmbedder())
    report = env.syncer.sync(DOCS)
    assert report.counts.updated == 2 and report.status == "ok"
    assert all(env.index.page_states()[p].version == 2 for p in ("111", "112", "113"))


def test_a_killed_sync_is_completed_by_the_next_run(
    tmp_path: Path, env: SyncEnv, fake: FakeConfluence
) -> None:
    env.syncer.sync(DOCS)
    for pid in ("111", "112", "113"):
        fake.edit_page(pid, body=f"<p>Revised text of page {pid} with keyword zebra.</p>")
    fake.delete_page("1000")

    # killed while embedding the third page: the first is written, the second may be (the index pipeline
    # writes one page behind the embedder), the third is not
    killed = subprocess.run(
        [sys.executable, "-m", "tests.support.sync_env", str(tmp_path), fake.url, "DOCS", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr
    states = env.index.page_states()
    assert "1000" not in states  # deletions come first
    versions = sorted(states[p].version for p in ("111", "112", "113"))
    assert versions in ([1, 1, 2], [1, 2, 2])  # some pages done, the others old
    for pid, state in states.items():  # every page answers from one complete version
        hits = [
            h for h in env.index.search_lexical("zebra revised text page", k=100) if h.evidence.page_id == pid
        ]
        assert len(hits) <= state.evidence_count
    assert SyncStore(sessions=env.sessions).last_run("DOCS").status == "running"  # type: ignore[union-attr]
    shown = env.admin.status()[0].last_run  # its process is gone: status and the Home tab say interrupted
    assert shown is not None and shown.status == "interrupted" and "killed" in shown.error

    report = env.syncer.sync(DOCS)  # the lock died with the process; the cursor did not move
    assert report.status == "ok" and report.counts.updated == versions.count(1)
    assert all(env.index.page_states()[p].version == 2 for p in ("111", "112", "113"))
    assert [r.status for r in SyncStore(sessions=env.sessions).runs("DOCS")] == ["ok", "interrupted", "ok"]


def test_two_syncs_of_one_space_never_run_at_once(env: SyncEnv, fake: FakeConfluence) -> None:
    with env.syncer.locked("DOCS"):  # another sync (thread or process) holds the space
        report = env.syncer.sync(DOCS)
        assert report.status == "busy" and "already running" in report.error
        assert env.syncer.sync(SpaceScope.of("OTHER")).status == "failed"  # other spaces are not blocked
    assert env.syncer.sync(DOCS).status == "ok"


def test_an_unreachable_or_unknown_space_fails_without_touching_the_index(
    env: SyncEnv, fake: FakeConfluence
) -> None:
    env.syncer.sync(DOCS)
    fake.faults.forbidden_spaces = {"DOCS"}
    report = env.syncer.sync(DOCS)
    assert report.status == "failed" and "space DOCS" in report.error
    assert len(env.index.page_states("DOCS")) == 10
    missing = env.syncer.sync(SpaceScope.of("GONE"))
    assert missing.status == "failed" and "does not exist" in missing.error


def test_a_vanished_parent_page_fails_the_run_instead_of_emptying_the_scope(
    env: SyncEnv, fake: FakeConfluence
) -> None:
    team = SpaceScope.of("DOCS", parent_id="110")
    assert env.syncer.sync(team).counts.added == 4
    fake.delete_page("110")
    report = env.syncer.sync(team)
    assert report.status == "failed" and "parent page 110" in report.error
    assert len(env.index.page_states("DOCS")) == 4


def test_cloud_sync_end_to_end(tmp_path: Path) -> None:
    """The same jobs against a Cloud-flavoured server: API v2 reads, cursor paging, v1 only for CQL."""
    with FakeConfluence(
        pages=tree_wiki(extra_pages=4), context_path="/wiki", max_limit=4, flavor="cloud"
    ) as fake:
        env = make_env(tmp_path, fake.url.removesuffix("/wiki"), cloud=True)
        scope = SpaceScope.of("DOCS", exclude_labels=["draft"])
        assert env.syncer.sync(scope).counts.added == 9  # "Draft ideas" is labelled draft
        fake.edit_page("111", body="<p>We now meet on Tuesdays.</p>")
        fake.edit_page("110", title="Crew")
        fake.move_page("1000", "111")
        fake.delete_page("1001")
        report = env.syncer.sync(scope)
        assert report.status == "ok", report.summary()
        assert (report.counts.updated, report.counts.deleted) == (5, 1)  # 110 and its 3 descendants, 1000
        hit = env.index.search_lexical("Tuesdays", k=1)[0].evidence
        assert hit.page_id == "111" and "Crew" in hit.context_text
        assert 410 not in {r.status for r in fake.requests}


OLD_SYNCED_PAGES = """CREATE TABLE synced_pages (
    space VARCHAR(255) NOT NULL, page_id VARCHAR(64) NOT NULL, title TEXT NOT NULL, breadcrumb TEXT NOT NULL,
    version INTEGER NOT NULL, synced_at DATETIME NOT NULL, PRIMARY KEY (space, page_id))"""


def test_a_database_that_kept_titles_and_versions_per_page_upgrades_in_place(
    tmp_path: Path, fake: FakeConfluence
) -> None:
    """Releases before the manifest was the one record kept each page's title and version in synced_pages too
    (NOT NULL): the upgrade drops those copies, keeps the breadcrumbs, and syncing goes on as before."""
    from sqlalchemy import create_engine, inspect, text

    env = make_env(tmp_path, fake.url)
    env.syncer.sync(DOCS)
    fetched(fake)
    engine = create_engine(f"sqlite:///{tmp_path / 'threadwise.sqlite'}")
    with engine.begin() as conn:  # back to the old table, as the old release filled it
        rows = conn.execute(text("SELECT space, page_id, breadcrumb, synced_at FROM synced_pages")).all()
        conn.execute(text("DROP TABLE synced_pages"))
        conn.execute(text(OLD_SYNCED_PAGES))
        for space, page_id, breadcrumb, synced_at in rows:
            conn.execute(
                text("INSERT INTO synced_pages VALUES (:s, :p, 'old title', :b, 7, :t)"),
                {"s": space, "p": page_id, "b": breadcrumb, "t": synced_at},
            )
    engine.dispose()

    env = make_env(tmp_path, fake.url)  # upgrades the database
    engine = create_engine(f"sqlite:///{tmp_path / 'threadwise.sqlite'}")
    columns = {c["name"] for c in inspect(engine).get_columns("synced_pages")}
    assert {"title", "version"}.isdisjoint(columns) and "breadcrumb" in columns
    assert len(SyncStore(sessions=env.sessions).breadcrumbs("DOCS")) == len(rows) == 10
    report = env.syncer.sync(DOCS)
    assert report.status == "ok" and report.counts.unchanged == 10 and fetched(fake) == []
    fake.move_page("113", "100")  # the breadcrumbs carried over still show a move
    report = env.syncer.sync(DOCS)
    assert report.counts.updated == 1 and fetched(fake) == ["113"]


def test_an_appended_paragraph_embeds_only_the_new_texts(env: SyncEnv, fake: FakeConfluence) -> None:
    sections = "".join(
        f"<h2>{h}</h2><p>{h} happens every {d}.</p>"
        for h, d in [("Standup", "morning"), ("Review", "Friday")]
    )
    fake.edit_page("111", body=sections)
    env.syncer.sync(DOCS)
    fake.edit_page("111", body=sections + "<h2>Coffee</h2><ul><li>Bring your own mug.</li></ul>")
    report = env.syncer.sync(DOCS)
    v = report.vectors
    assert report.counts.updated == 1 and v.evidences == env.index.page_states()["111"].evidence_count
    assert 1 <= v.embedded < v.evidences and v.cached == v.evidences - v.embedded  # the rest from the cache
    assert f"{v.embedded} texts embedded, {v.cached} reused" in report.summary()
