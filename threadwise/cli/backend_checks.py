"""`threadwise doctor`'s lines for what may run beside Threadwise: the state database, a Chroma server, an
embeddings server and a re-rank server. Each line is one real request, and says what answered or what to fix."""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadwise.chat.doctor import Check, run_check

if TYPE_CHECKING:
    from threadwise.wiring import Threadwise


def backend_checks(tw: Threadwise) -> list[Check]:
    from threadwise.models.server_embedder import ServerEmbedder
    from threadwise.models.server_reranker import ServerReranker

    checks = [run_check("Database", lambda: _database(tw))]
    server = tw.index.chroma_server
    if server is not None:
        checks.append(
            run_check(
                "Chroma server",
                lambda: f"{server.url}: {tw.index.chroma.count()} rows in {tw.index.collection}",
            )
        )
    embedder, reranker = tw.embedder, tw.reranker
    if isinstance(embedder, ServerEmbedder):

        def embed() -> str:
            embedder.warm_up()
            return f"{embedder.model} at {embedder.server.where}: {embedder.dim}-d vectors"

        checks.append(run_check("Embeddings server", embed))
    if isinstance(reranker, ServerReranker):

        def rerank() -> str:
            reranker.warm_up()
            return f"{reranker.model} at {reranker.server.where} ({reranker.api} API) scored a test pair"

        checks.append(run_check("Re-rank server", rerank))
    return checks


def _database(tw: Threadwise) -> str:
    """Connects (running the schema upgrade, as every command does) and names the database without its password."""
    from sqlalchemy import text

    engine = tw.sessions.kw["bind"]
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    return f"{engine.dialect.name} at {engine.url.render_as_string(hide_password=True)}"
