"""The index manifest in the shared database (SQLite and a real PostgreSQL): an old release's sqlite3 manifest
file is read in once, on first open, with its dirty marks; collections sharing a database keep apart."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import text

from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.core.ingest.extract import extract_evidence
from threadwise.core.retrieve.retriever import Retriever
from threadwise.db.index_tables import IndexCollectionRow, IndexDirtyRow, IndexPageRow
from threadwise.index.indexer import index_pages
from threadwise.index.manifest import IndexManifest, PageState
from threadwise.index.store import EvidenceIndex
from threadwise.models.embedders import HashingEmbedder
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

# the manifest file of releases before the shared database, as they created it beside Chroma
OLD_SCHEMA = """
CREATE TABLE pages (
    page_id TEXT PRIMARY KEY, space TEXT NOT NULL, version INTEGER NOT NULL, content_hash TEXT NOT NULL,
    title TEXT NOT NULL, evidence_count INTEGER NOT NULL
);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE dirty (page_id TEXT PRIMARY KEY);
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def env(request: pytest.FixtureRequest) -> dict[str, str]:
    base = {"THREADWISE_EMBEDDER": "hashing"}
    if request.param == "sqlite":
        return base  # the default: threadwise.sqlite in the data folder
    return {**base, "THREADWISE_DATABASE_URL": str(request.getfixturevalue("postgres_url"))}


def write_old_manifest(
    path: Path, states: list[PageState], *, embedder: str, generation: int, dirty: list[str]
) -> None:
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.executemany(
        "INSERT INTO pages VALUES (?, ?, ?, ?, ?, ?)", [tuple(s.__dict__.values()) for s in states]
    )
    db.executemany(
        "INSERT INTO meta VALUES (?, ?)", [("embedder", embedder), ("generation", str(generation))]
    )
    db.executemany("INSERT INTO dirty VALUES (?)", [(p,) for p in dirty])
    db.commit()
    db.close()


def test_an_old_manifest_file_is_migrated_once_on_first_open(env: dict[str, str], tmp_path: Path) -> None:
    app = Threadwise(settings=load_settings(env=env, data_dir=tmp_path))
    pages, _ = load_pages(SAMPLE_WIKI_DIR)
    index_pages(app.index, pages)
    states, generation = app.index.page_states(), app.index.generation()
    # an edit killed after its first step: new rows in Chroma beside the old ones, the page marked dirty
    edited = replace(pages[0], version=pages[0].version + 1, body="<p>Zanzibar quokka replaced it all.</p>")
    new_rows = extract_evidence(edited)
    app.index.chroma.add(new_rows, app.index.vectors_of(new_rows), edited.content_hash)
    # what an older release left: the same state in a sqlite3 file beside Chroma, no manifest tables
    old = tmp_path / "index" / "evidence.manifest.sqlite"
    write_old_manifest(
        old, list(states.values()), embedder=app.index.embedder.name, generation=generation, dirty=[edited.id]
    )
    with app.engine.begin() as conn:
        for row in (IndexDirtyRow, IndexPageRow, IndexCollectionRow):
            conn.execute(text(f"DROP TABLE {row.__tablename__}"))
    app.engine.dispose()

    again = Threadwise(settings=load_settings(env=env, data_dir=tmp_path))
    assert again.index.page_states() == states and again.index.generation() == generation
    assert not old.exists() and old.with_name(old.name + ".migrated").exists()
    assert again.index.manifest.dirty() == [edited.id]
    # queries answer from the state the old file named: the killed edit's rows stay invisible
    found = Retriever(index=again.index, embedder=again.index.embedder).retrieve("zanzibar quokka")
    assert all("quokka" not in e.text.lower() for e in found.evidences)
    again.index.flush()  # the migrated dirty mark lets flush sweep the orphan rows
    assert again.index.chroma.count() == again.index.count() and again.index.manifest.dirty() == []

    third = Threadwise(settings=load_settings(env=env, data_dir=tmp_path))  # no second migration
    assert third.index.page_states() == states and third.index.generation() == generation


def test_collections_in_one_database_keep_apart(tmp_path: Path) -> None:
    pages, _ = load_pages(SAMPLE_WIKI_DIR)
    one = EvidenceIndex(directory=tmp_path, embedder=HashingEmbedder(), collection="one")
    index_pages(one, pages[:2])
    two = EvidenceIndex(directory=tmp_path, embedder=HashingEmbedder(), collection="two")
    assert two.page_states() == {} and two.count() == 0 and two.generation() == 0
    index_pages(two, pages[2:3])
    assert set(one.page_states()) == {p.id for p in pages[:2]} and set(two.page_states()) == {pages[2].id}
    assert one.manifest.engine.url == two.manifest.engine.url  # one SQLite file in the folder holds both
    batches = list(IndexManifest(engine=one.manifest.engine, collection="one").states(batch=1))
    assert [len(b) for b in batches] == [1, 1]  # paged by key, never read whole
