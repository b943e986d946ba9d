"""The composition root: reads the settings once and builds every part, each handed its collaborators.

Everything is built lazily, on first use, and each part's modules are imported only then: `threadwise
--help` and `status` never import openai, the models or the pipeline, and the Slack process loads the models
once, before the first question.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from threadwise.settings import Settings

if TYPE_CHECKING:  # the types only: these modules load late, when a command first needs them
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session, sessionmaker

    from threadwise.chat.conversations import ConversationService
    from threadwise.chat.handover import ClaimKeeper
    from threadwise.connectors.confluence import ConfluenceClient
    from threadwise.core.pipeline import Pipeline
    from threadwise.core.protocols import Answerer, Embedder, QuestionCompleter, Reranker
    from threadwise.core.retrieve.retriever import Retriever
    from threadwise.db.conversations import ConversationStore
    from threadwise.db.leases import Leases
    from threadwise.front_ends import FrontEnds
    from threadwise.index.store import EvidenceIndex
    from threadwise.models.llm_settings import LLMSettings
    from threadwise.permissions import PermissionService
    from threadwise.reports.service import GapReports
    from threadwise.sync.admin import AdminService
    from threadwise.sync.leader import LeaderElection, SyncLock
    from threadwise.sync.scheduler import SyncScheduler
    from threadwise.sync.sync import SpaceSyncer

log = logging.getLogger(__name__)


class Threadwise:
    """All of Threadwise's parts for one data folder and one set of settings."""

    def __init__(self, *, settings: Settings, collection: str = "evidence") -> None:
        self.settings = settings
        self.collection = collection

    # ----- models -----
    @cached_property
    def llm(self) -> dict[str, LLMSettings] | None:
        from threadwise.models.llm_settings import llm_settings_from_env

        return llm_settings_from_env(self.settings.env)

    @cached_property
    def embedder(self) -> Embedder:
        """The retrieval embedder: the index's vectors and the questions' (the collection is tied to it).
        THREADWISE_EMBEDDINGS_BASE_URL or _MODEL select an embeddings server (models/server_settings.py)."""
        from threadwise.models.server_settings import embeddings_server_configured, server_embedder_from_env

        chosen = self.settings.get("THREADWISE_EMBEDDER").strip().lower()
        if chosen == "server" or (embeddings_server_configured(self.settings.env) and not chosen):
            return server_embedder_from_env(self.settings.env)
        if chosen and embeddings_server_configured(self.settings.env):
            raise ValueError(
                f"THREADWISE_EMBEDDER={chosen} and THREADWISE_EMBEDDINGS_BASE_URL/_MODEL are both set: unset "
                "THREADWISE_EMBEDDER to embed through the server, or the THREADWISE_EMBEDDINGS_* ones to embed here"
            )
        from threadwise.models.embedders import make_embedder

        embedder: Embedder = make_embedder(self.settings.embedder, model_path=self.settings.embedder_model)
        return embedder

    @cached_property
    def similarity_embedder(self) -> Embedder:
        """The embedder that compares texts with each other: Explain and the extractive answerer.

        Unless configured, the retrieval embedder does it when it is symmetric (one model loaded, and Explain
        reuses the index's vectors); an asymmetric one (E5, under any of its names) hands it to USE.
        """
        name = self.settings.similarity_embedder
        if name is None:
            if getattr(self.embedder, "symmetric", True):
                return self.embedder
            name = "use"
        from threadwise.models.embedders import make_embedder

        embedder: Embedder = make_embedder(name, model_path=self.settings.embedder_model)
        return embedder

    @cached_property
    def reranker(self) -> Reranker | None:
        from threadwise.models.server_settings import server_reranker_from_env

        server = server_reranker_from_env(self.settings.env)
        if server is not None:
            if self.settings.reranker_model:
                raise ValueError(
                    "THREADWISE_RERANK_BASE_URL and THREADWISE_RERANKER_MODEL are both set: choose the re-rank "
                    "server or the in-process cross-encoder"
                )
            return server
        if not self.settings.reranker_model:
            return None
        from threadwise.models.rerank import FlagCrossEncoder

        return FlagCrossEncoder(model=self.settings.reranker_model)

    # ----- index and pipeline -----
    @cached_property
    def index(self) -> EvidenceIndex:
        from threadwise.index.chroma_store import ChromaServer
        from threadwise.index.manifest import IndexManifest
        from threadwise.index.store import EvidenceIndex

        url = self.settings.get("THREADWISE_CHROMA_URL").strip()
        token = self.settings.get("THREADWISE_CHROMA_TOKEN").strip() or None
        # on a shared server each deployment wants its own collection (its manifest sweeps the rest); replicas
        # of one deployment share it, and the manifest in the shared database
        collection = (
            self.settings.get("THREADWISE_CHROMA_COLLECTION").strip() if url else ""
        ) or self.collection
        return EvidenceIndex(
            directory=self.settings.data_dir / "index",
            embedder=self.embedder,
            collection=collection,
            chroma_server=ChromaServer(url=url, token=token) if url else None,
            manifest=IndexManifest(engine=self.engine, collection=collection),
        )

    @cached_property
    def retriever(self) -> Retriever:
        from threadwise.core.retrieve.retriever import RetrievalOptions, Retriever

        return Retriever(
            index=self.index,
            embedder=self.embedder,
            reranker=self.reranker,
            options=RetrievalOptions(top_k=self.settings.top_k),
        )

    @cached_property
    def completer(self) -> QuestionCompleter:
        from threadwise.core.complete.history import HistoryCompleter

        offline = HistoryCompleter()
        if self.llm is None:
            return offline
        from threadwise.core.complete.llm import LLMCompleter
        from threadwise.models.llm_settings import make_chat

        return LLMCompleter(chat=make_chat(self.llm["completion"]), fallback=offline)

    def _llm_answerer(self, role: str, *, follow_ups: bool) -> Answerer:
        from threadwise.core.answer.llm import LLMAnswerer
        from threadwise.models.llm_settings import make_chat

        assert self.llm is not None
        return LLMAnswerer(chat=make_chat(self.llm[role]), role=role, follow_ups=3 if follow_ups else 0)

    @cached_property
    def answerer(self) -> Answerer:
        if self.llm is None:
            from threadwise.core.answer.extractive import ExtractiveAnswerer

            return ExtractiveAnswerer(embedder=self.similarity_embedder)
        return self._llm_answerer("answer", follow_ups=True)

    @cached_property
    def counterfactual_answerer(self) -> Answerer:
        """Explain re-answers with evidence removed: a cheaper model may do it (paper: gpt-4o-mini)."""
        if self.llm is None:
            return self.answerer
        return self._llm_answerer("counterfactual", follow_ups=False)

    @cached_property
    def pipeline(self) -> Pipeline:
        from threadwise.core.pipeline import Pipeline

        config = {
            "embedder": self.embedder.name,
            "similarity_embedder": self.similarity_embedder.name,
            "reranker": getattr(self.reranker, "name", None),
            "completer": getattr(self.completer, "name", ""),
            "answerer": getattr(self.answerer, "name", ""),
            "top_k": self.settings.top_k,
        }
        return Pipeline(
            completer=self.completer, retriever=self.retriever, answerer=self.answerer, config=config
        )

    def warm_up(self) -> None:
        """Load the models, open the index (Chroma and BM25) and answer one question to no one, now rather
        than in the first users' requests: everything is then created once, by one thread."""
        self.embedder.warm_up()
        self.similarity_embedder.warm_up()
        if self.reranker is not None:
            self.reranker.warm_up()
        self.index.warm_up()
        if self.index.count() > 0:
            self.retriever.retrieve("warm-up")

    # ----- state -----
    @cached_property
    def engine(self) -> Engine:
        """The one database of every piece of state replicas share (the index manifest included), upgraded."""
        from threadwise.db.base import make_engine
        from threadwise.db.schema import upgrade

        self.settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.settings.data_dir.chmod(0o700)  # a folder made before (umask 022) is closed too
        engine = make_engine(self.settings.database_url)
        upgrade(engine)
        return engine

    @cached_property
    def sessions(self) -> sessionmaker[Session]:
        from threadwise.db.base import make_sessions

        return make_sessions(self.engine)

    # ----- several replicas: who leads the sync, one sync at a time -----
    @cached_property
    def replica_id(self) -> str:
        from threadwise.sync.leader import replica_id

        return replica_id(self.settings.get("THREADWISE_REPLICA_ID"))

    @cached_property
    def lease_ttl_s(self) -> float:
        from threadwise.sync.leader import lease_ttl

        return lease_ttl(self.settings.get("THREADWISE_LEASE_TTL_SECONDS"))

    @cached_property
    def leases(self) -> Leases:
        from threadwise.db.leases import Leases

        return Leases(sessions=self.sessions)

    @cached_property
    def leader(self) -> LeaderElection:
        from threadwise.sync.leader import LeaderElection

        return LeaderElection(leases=self.leases, holder=self.replica_id, ttl_s=self.lease_ttl_s)

    @cached_property
    def sync_lock(self) -> SyncLock:
        from threadwise.sync.leader import SyncLock

        return SyncLock(leases=self.leases, replica=self.replica_id, ttl_s=self.lease_ttl_s)

    @cached_property
    def claims(self) -> ClaimKeeper:
        """Questions in progress, kept in the database for another replica to finish if this one dies."""
        from threadwise.chat.handover import ClaimKeeper
        from threadwise.db.claims import ClaimStore

        return ClaimKeeper(
            store=ClaimStore(sessions=self.sessions), replica=self.replica_id, ttl_s=self.lease_ttl_s
        )

    @cached_property
    def store(self) -> ConversationStore:
        from threadwise.db.conversations import ConversationStore

        return ConversationStore(sessions=self.sessions)

    @cached_property
    def conversations(self) -> ConversationService:
        from threadwise.chat.conversations import ConversationService
        from threadwise.chat.turn_views import PageAge

        return ConversationService(
            pipeline=self.pipeline,
            store=self.store,
            index=self.index,
            similarity_embedder=self.similarity_embedder,
            counterfactual_answerer=lambda: self.counterfactual_answerer,
            claims=self.claims,
            permissions=self.permissions,
            page_age=PageAge(stale_after_days=self.settings.stale_after_days),
        )

    @cached_property
    def gap_reports(self) -> GapReports:
        """The knowledge-gap report for admins (`threadwise report`; the App Home's top groups, as a file)."""
        from threadwise.reports.service import GapReports

        return GapReports(
            sessions=self.sessions,
            embedder=self.similarity_embedder,
            stale_after_days=self.settings.stale_after_days,
            shows_askers=self.settings.report_shows_askers,
        )

    @cached_property
    def permissions(self) -> PermissionService:
        """Who may read what (THREADWISE_PERMISSIONS; per-user reads the readers the syncs stored)."""
        from threadwise.permissions import PermissionService
        from threadwise.permissions.email_map import SETTING, EmailMapFile

        return PermissionService(
            policy=self.settings.permissions,
            sessions=self.sessions,
            email_map=EmailMapFile.from_setting(self.settings.get(SETTING)),
        )

    # ----- Confluence, sync, admin -----
    @cached_property
    def confluence(self) -> ConfluenceClient | None:
        """The Confluence client; None when CONFLUENCE_URL is not set. A ConfluenceConfigError when it is set
        but the rest is missing or wrong (e.g. no credentials yet)."""
        from threadwise.connectors.confluence import ConfluenceClient, ConfluenceSettings

        settings = ConfluenceSettings.from_env(self.settings.env)
        return ConfluenceClient(settings=settings) if settings is not None else None

    @cached_property
    def confluence_problem(self) -> str | None:
        """Why Confluence cannot be used although CONFLUENCE_URL is set; None when it can (or is not set)."""
        from threadwise.connectors.confluence import ConfluenceConfigError

        try:
            _ = self.confluence
        except ConfluenceConfigError as err:
            return str(err)
        return None

    @cached_property
    def syncer(self) -> SpaceSyncer:
        from threadwise.index.indexer import PageLimits
        from threadwise.sync.sync import SpaceSyncer

        client = None if self.confluence_problem else self.confluence
        return SpaceSyncer(
            client=client,
            index=self.index,
            sessions=self.sessions,
            lock_dir=self.settings.data_dir,
            permissions=self.settings.permissions,
            limits=PageLimits.from_env(self.settings.env),
        )

    @cached_property
    def admin(self) -> AdminService:
        """The admin service; with a half-configured Confluence, status, list and remove still work and the
        actions that need Confluence say what is missing."""
        from threadwise.sync.admin import AdminService

        problem = self.confluence_problem
        return AdminService(
            client=None if problem else self.confluence,
            syncer=self.syncer,
            index=self.index,
            sessions=self.sessions,
            confluence_problem=problem,
            sync_lock=self.sync_lock,
        )

    @cached_property
    def scheduler(self) -> SyncScheduler:
        from threadwise.sync.scheduler import SyncScheduler

        minutes = float(self.settings.get("THREADWISE_SYNC_INTERVAL_MINUTES", "30"))
        permission_minutes = float(self.settings.get("THREADWISE_PERMISSION_SYNC_MINUTES", "30"))
        return SyncScheduler(
            admin=self.admin,
            interval_minutes=minutes,
            leader=self.leader,
            permission_interval_minutes=permission_minutes,
            purge=self._retention_purge(),
        )

    def _retention_purge(self) -> Callable[[], object] | None:
        """The daily purge past THREADWISE_RETENTION_DAYS (default 90; 0 keeps everything)."""
        from threadwise.db.retention import purge_older_than, retention_days

        days = retention_days(self.settings.env)
        return (lambda: purge_older_than(self.sessions, days)) if days > 0 else None

    @cached_property
    def front_ends(self) -> FrontEnds:
        """Slack and Teams: their settings, which of them run, their bots (`serve`)."""
        from threadwise.front_ends import FrontEnds

        return FrontEnds(root=self)
