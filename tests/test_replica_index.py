"""Two replicas over one real PostgreSQL (the manifest and its generation) and one real `chroma run` (the
vectors): a change one makes is what the other answers from at its next question, lexical search included
(each replica rebuilds its BM25 from the server's rows when the generation in the database moves)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy import text

from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.index.indexer import index_pages
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

# replica B: its own process and data folder, built by the composition root as `serve` builds it; it answers
# each question read from stdin with its top pages by each ranking, as one JSON line
REPLICA = """
import json, sys
from pathlib import Path
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

app = Threadwise(settings=load_settings(env=json.loads(sys.argv[1]), data_dir=Path(sys.argv[2])))
app.warm_up()
print("ready", flush=True)
for line in sys.stdin:
    q = line.strip()
    print(json.dumps({
        "generation": app.index.generation(),
        "lexical": [h.evidence.page_id for h in app.index.search_lexical(q, 3)],
        "pages": [pid for pid, _score in app.index.search_pages(q, 3)],
        "dense": [h.evidence.page_id for h in app.index.search_dense(app.embedder.embed_query(q), 3)],
    }), flush=True)
"""


def replicas_env(postgres_url: str, chroma_url: str) -> dict[str, str]:
    """The settings replicas share: one database, one Chroma server, one collection of their own."""
    return {
        "THREADWISE_EMBEDDER": "hashing",
        "THREADWISE_DATABASE_URL": postgres_url,
        "THREADWISE_CHROMA_URL": chroma_url,
        "THREADWISE_CHROMA_COLLECTION": f"replicas-{uuid.uuid4().hex[:8]}",
    }


QUESTION = "zanzibar quokka"  # words no sample page has


def test_a_replica_answers_from_the_change_another_replica_made(
    postgres_url: str, chroma_url: str, tmp_path: Path
) -> None:
    env = replicas_env(postgres_url, chroma_url)
    a = Threadwise(settings=load_settings(env=env, data_dir=tmp_path / "a"))
    pages, _ = load_pages(SAMPLE_WIKI_DIR)
    index_pages(a.index, pages)

    b = subprocess.Popen(
        [sys.executable, "-c", REPLICA, json.dumps(env), str(tmp_path / "b")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(180, b.kill)  # a stuck replica fails the test instead of hanging it
    watchdog.start()
    assert b.stdin is not None and b.stdout is not None

    def ask_b() -> dict[str, Any]:
        assert b.stdin is not None and b.stdout is not None
        b.stdin.write(QUESTION + "\n")
        b.stdin.flush()
        return dict(json.loads(b.stdout.readline()))

    try:
        assert b.stdout.readline().strip() == "ready"
        before = ask_b()  # B has loaded BM25 for this generation
        assert before["generation"] == a.index.generation() and before["lexical"] == []

        target = pages[0]
        edited = replace(
            target, version=target.version + 1, body=f"<p>The {QUESTION} rollout finished on Friday.</p>"
        )
        index_pages(a.index, [edited, *pages[1:]])  # replica A indexes the changed page
        after = ask_b()
        assert after["generation"] == a.index.generation() > before["generation"]
        assert after["lexical"][0] == edited.id and after["pages"][0] == edited.id
        assert after["dense"][0] == edited.id

        a.index.delete_page(edited.id)  # and a page A deletes leaves B's answers
        gone = ask_b()
        assert gone["generation"] == a.index.generation()
        assert edited.id not in gone["lexical"] + gone["pages"] + gone["dense"]
    finally:
        b.stdin.close()
        b.wait(timeout=60)
        watchdog.cancel()
    assert b.returncode == 0


def test_writers_on_two_replicas_take_turns_through_the_database(
    postgres_url: str, chroma_url: str, tmp_path: Path
) -> None:
    """Each replica's folder has its own lock file, which the other cannot see: the collection's advisory lock
    in PostgreSQL makes B's page switch wait while A holds the index's write lock."""
    env = replicas_env(postgres_url, chroma_url)
    a = Threadwise(settings=load_settings(env=env, data_dir=tmp_path / "a"))
    b = Threadwise(settings=load_settings(env=env, data_dir=tmp_path / "b"))
    pages, _ = load_pages(SAMPLE_WIKI_DIR)
    order: list[str] = []

    def b_writes() -> None:
        index_pages(b.index, pages[:1])
        order.append("B wrote")

    def b_waits_on_the_database() -> bool:
        with a.engine.connect() as conn:
            waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            return bool(conn.execute(text(waiting)).scalar())

    writer = threading.Thread(target=b_writes)
    with a.index._write_lock:
        writer.start()
        deadline = time.monotonic() + 60
        while writer.is_alive() and not b_waits_on_the_database() and time.monotonic() < deadline:
            time.sleep(0.05)
        order.append("A let go")
    writer.join(60)
    assert order == ["A let go", "B wrote"]
    assert set(a.index.page_states()) == {pages[0].id}
