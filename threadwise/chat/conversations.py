"""The platform-neutral conversation service: a question in a thread → an answer; Explain; feedback.

Slack (and later Teams) are adapters over this. It never raises for a failing LLM or an empty index: the
user always gets a reply that says what happened.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from threadwise import logs, metrics
from threadwise.chat.handover import ClaimKeeper
from threadwise.chat.trace_render import render_trace
from threadwise.chat.turn_views import (
    ExplainView,
    PageAge,
    SourceView,
    TurnView,
    page_groups,
    source_dicts,
    turn_view,
)
from threadwise.core.attribute.attribution import DEFAULT_MAX_WORKERS, explain
from threadwise.core.attribute.explanation import Explanation, render_explanation
from threadwise.core.complete.conversation import conversation_history, past_turn
from threadwise.core.pipeline import Pipeline
from threadwise.core.protocols import ChatError, Embedder, ModelServerError
from threadwise.core.types import Answer, Evidence, Scope
from threadwise.db.conversations import ConversationStore, ThreadKey
from threadwise.index.store import EvidenceIndex
from threadwise.permissions import Asker, PermissionService
from threadwise.redact import redact_endpoints

__all__ = ["ConversationService", "ExplainView", "SourceView", "TurnView", "page_groups"]

log = logging.getLogger(__name__)

EMPTY_INDEX = (
    "I don't know anything yet: no Confluence space has been synced. "
    "An admin can add one with `/threadwise add KEY` (or `threadwise spaces add KEY`)."
)
# What users see names no endpoint or host: the full error is in the log; the trace keeps it without addresses.
LLM_DOWN = "I couldn't reach the language model just now. Please try again in a minute."
MODEL_SERVER_DOWN = "I couldn't reach the search models just now. Please try again in a minute."
FAILED = "Something went wrong while answering ({reason}). The error is logged; please try again."


class ConversationService:
    """Answers in threads, keeps their history, explains answers and records votes."""

    def __init__(
        self,
        *,
        pipeline: Pipeline,
        store: ConversationStore,
        index: EvidenceIndex,
        similarity_embedder: Embedder | None = None,
        counterfactual_answerer: Callable[[], Any] | None = None,
        explain_workers: int = DEFAULT_MAX_WORKERS,
        claims: ClaimKeeper | None = None,
        permissions: PermissionService | None = None,
        page_age: PageAge | None = None,
    ) -> None:
        """`claims`: questions in progress recorded for other replicas to take over if this one dies.
        `permissions`: who may read what (None: everyone may read everything indexed).
        `page_age`: when a cited page is shown as possibly outdated (default: after 730 days)."""
        self.pipeline = pipeline
        self.page_age = page_age or PageAge()
        self.claims = claims
        self.permissions = permissions
        self.store = store
        self.index = index
        # Explain compares texts with this one (default: the index's); the index's vectors are reused if the same
        self.similarity_embedder = similarity_embedder or index.embedder
        self._counterfactual_answerer = counterfactual_answerer
        self._explain_workers = explain_workers
        # Two presses of Explain on one answer compute it once: the second waits for the first, then reads the
        # stored result. A fixed set of locks, picked by turn id, keeps memory bounded in a long-running bot.
        self._explain_locks = [threading.Lock() for _ in range(64)]

    # ----- asking -----
    @logs.in_thread
    def ask(
        self,
        key: ThreadKey,
        question: str,
        *,
        user: str = "",
        spaces: Sequence[str] | None = None,
        thread_messages: Sequence[str] = (),
        asker: Asker | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> TurnView:
        """Answer `question` in the thread `key`. `thread_messages`: what people said in the thread besides
        the questions already answered, oldest first; it completes the question like earlier turns do.
        `asker`: who asks and whether the conversation is private (None: an unknown person); under the
        per-user policy it decides which pages may answer (`PermissionService.scope_for`).
        `on_text`: the answer's text as the language model writes it (deltas, in order), for a front end that
        streams it; never called for an answer written whole (the offline one, not found, a failure). The
        returned turn is what counts: the streamed text may differ from it (cut by a failure, citations)."""
        started = time.perf_counter()
        conversation_id = self.store.conversation_id(key, started_by=user)
        assert conversation_id is not None
        answered = (
            past_turn(
                question=t.question,
                completed_question=t.completed_question,
                answer=t.answer,
                source_page_ids=(s["page_id"] for s in t.sources),
            )
            for t in self.store.turns(conversation_id)
            if not t.error
        )
        history = conversation_history(answered, said=thread_messages)
        fields: dict[str, Any]
        withheld = False
        try:
            if self.index.count() == 0:
                raise _Reply(EMPTY_INDEX)
            scope, wider = self._scopes(asker, spaces)
            result = self.pipeline.ask(question, history, scope, wider=wider, on_text=on_text)
            withheld = result.withheld
            fields = {
                "completed_question": result.completion.question,
                "answer": result.answer.text,
                "not_found": result.answer.not_found,
                "error": None,
                "sources": source_dicts(result),
                "cited": list(result.answer.cited),
                "follow_ups": list(result.answer.follow_ups),
                "trace": {**result.trace(), "thread_messages": list(thread_messages)},
                "timings": result.timings_ms,
                "config": result.config,
                "confidence": result.confidence.as_dict() if result.confidence else None,
            }
        except _Reply as reply:
            fields = self._failed(question, str(reply), reason="empty index")
        except ChatError as err:
            log.warning("LLM failure while answering: %s", err)
            metrics.LLM_ERRORS.labels(what="answer").inc()
            fields = self._failed(question, LLM_DOWN, reason=redact_endpoints(str(err)))
        except ModelServerError as err:
            log.warning("embedding/re-rank server failure while answering: %s", err)
            fields = self._failed(question, MODEL_SERVER_DOWN, reason=redact_endpoints(str(err)))
        except Exception as err:  # never leave a user without a reply
            log.exception("answering failed")
            fields = self._failed(
                question, FAILED.format(reason=type(err).__name__), reason=redact_endpoints(repr(err))
            )
        turn_id = self.store.add_turn(conversation_id, asked_by=user, question=question, **fields)
        logs.bind_turn(turn_id)
        turn = self.store.turn(turn_id)
        assert turn is not None
        outcome = metrics.outcome(failed=bool(turn.error), withheld=withheld, not_found=turn.not_found)
        metrics.question(key.platform, outcome, time.perf_counter() - started, fields["timings"])
        log.info("turn %d: %s", turn_id, outcome)
        note = self.permissions.unmapped_note(asker) if self.permissions and turn.not_found else None
        return turn_view(turn, withheld=withheld, unmapped_note=note or "", page_age=self.page_age)

    def _scopes(self, asker: Asker | None, spaces: Sequence[str] | None) -> tuple[Scope, Scope | None]:
        """The scope of this conversation, and (not private, asker known) what the asker alone may read."""
        if self.permissions is None:
            return Scope.of(spaces), None
        scope = self.permissions.scope_for(asker, spaces)
        if not self.permissions.per_user or asker is None or asker.private or not asker.email:
            return scope, None
        return scope, self.permissions.scope_for(Asker(asker.email, private=True), spaces)

    @staticmethod
    def _failed(question: str, message: str, *, reason: str) -> dict[str, Any]:
        return {
            "completed_question": question,
            "answer": message,
            "not_found": True,
            "error": reason,
            "sources": [],
            "cited": [],
            "follow_ups": [],
            "trace": {"question": question, "error": reason},
            "timings": {},
            "config": {},
        }

    def knows_thread(self, key: ThreadKey) -> bool:
        """True when this thread is a conversation the bot has answered in."""
        cid = self.store.conversation_id(key, create=False)
        return cid is not None and bool(self.store.turns(cid))

    def get_turn(self, turn_id: int) -> TurnView | None:
        turn = self.store.turn(turn_id)
        return turn_view(turn, page_age=self.page_age) if turn else None

    def turn_in(self, turn_id: int, key: ThreadKey) -> TurnView | None:
        """The turn if it was answered in the conversation `key`, else None (buttons check where they are)."""
        turn = self.store.turn(turn_id)
        if turn is None or self.store.conversation_key(turn.conversation_id) != key:
            return None
        return turn_view(turn, page_age=self.page_age)

    def history(self, key: ThreadKey) -> list[TurnView]:
        cid = self.store.conversation_id(key, create=False)
        return (
            [turn_view(t, page_age=self.page_age) for t in self.store.turns(cid)] if cid is not None else []
        )

    def claim_event(self, event_key: str, *, resume: dict[str, Any] | None = None) -> bool:
        """True the first time a platform event is seen: retried or doubled events are answered once.
        `resume`: what another replica needs to answer the question if this one dies before it has (the
        front end then calls `claims.finish(event_key)` once answered)."""
        if resume is not None and self.claims is not None:
            return self.claims.claim(event_key, resume)
        return bool(self.store.claim_event(event_key))

    def finish_event(self, event_key: str | None) -> None:
        """The question claimed as `event_key` with a `resume` was answered (or told why not): no other
        replica takes it over. Nothing to do for None or without hand-over."""
        if event_key is not None and self.claims is not None:
            self.claims.finish(event_key)

    def set_message_ref(self, turn_id: int, ref: str) -> None:
        self.store.set_message_ref(turn_id, ref)

    def turn_for_message(self, key: ThreadKey, ref: str) -> int | None:
        """The turn answered by message `ref` in the channel of `key` (what Teams' feedback names)."""
        return self.store.turn_for_message(key.platform, key.channel, ref)

    # ----- explaining -----
    @logs.for_turn
    def explain(self, turn_id: int) -> ExplainView:
        """Counterfactual attribution of a turn's answer; computed once, then served from the store."""
        with self._lock_for(turn_id):
            cached = self.store.explanation(turn_id)
            if cached is not None:
                expl = Explanation.from_dict(cached)
                metrics.EXPLAINS.labels(result="cached").inc()
                return ExplainView(turn_id, render_explanation(expl), cached, cached=True)
            turn = self.store.turn(turn_id)
            if turn is None:
                return ExplainView(
                    turn_id, f"There is no answer {turn_id} to explain.", {}, False, "unknown turn"
                )
            if turn.error or not turn.sources:
                return ExplainView(
                    turn_id,
                    "This answer used no sources, so there is nothing to attribute.",
                    {},
                    False,
                    "no sources",
                )
            evidences = [Evidence.from_dict(s) for s in turn.sources]
            answerer = (
                self._counterfactual_answerer() if self._counterfactual_answerer else self.pipeline.answerer
            )
            answer = Answer(text=turn.answer, cited=tuple(turn.cited), not_found=turn.not_found)
            started = time.perf_counter()
            try:
                expl = explain(
                    turn.completed_question,
                    answer,
                    evidences,
                    answerer=answerer,
                    embedder=self.similarity_embedder,
                    evidence_embeddings=self.index.vectors_for(self.similarity_embedder, evidences),
                    max_workers=self._explain_workers,
                    rankings_agree=bool(turn.trace.get("rankings_agree", True)),
                )
            except ChatError as err:
                log.warning("LLM failure while explaining: %s", err)
                metrics.LLM_ERRORS.labels(what="explain").inc()
                metrics.EXPLAINS.labels(result="failed").inc()
                return ExplainView(turn_id, LLM_DOWN, {}, False, redact_endpoints(str(err)))
            metrics.STAGE_SECONDS.labels(stage="attribution").observe(time.perf_counter() - started)
            metrics.EXPLAINS.labels(result="computed").inc()
            self.store.save_explanation(turn_id, expl.to_dict())
            stored = self.store.explanation(turn_id)  # as JSON, the same shape a later (cached) call returns
            return ExplainView(turn_id, render_explanation(expl), stored or {}, cached=False)

    def _lock_for(self, turn_id: int) -> threading.Lock:
        return self._explain_locks[turn_id % len(self._explain_locks)]

    # ----- trace and feedback -----
    def trace(self, turn_id: int) -> dict[str, Any]:
        turn = self.store.turn(turn_id)
        if turn is None:
            raise KeyError(f"no turn {turn_id}")
        trace = dict(turn.trace)
        trace["turn_id"] = turn.id
        trace["sources"] = [
            {k: s[k] for k in ("number", "label", "url", "kind", "scores")} for s in turn.sources
        ]
        trace["answer"] = turn.answer
        explanation = self.store.explanation(turn_id)
        if explanation is not None:
            trace["counterfactual_answers"] = {
                f"cluster {c['index']}": list(c["counterfactual_answers"]) for c in explanation["clusters"]
            }
        return trace

    def trace_text(self, turn_id: int) -> str:
        return render_trace(self.trace(turn_id))

    def vote(self, turn_id: int, user: str, vote: str, comment: str | None = None) -> None:
        self.store.vote(turn_id, user, vote, comment)
        metrics.VOTES.labels(vote=vote).inc()

    def comment(self, turn_id: int, user: str, text: str) -> None:
        self.store.add_comment(turn_id, user, text)

    def feedback_summary(self, asker: Asker | None = None) -> dict[str, Any]:
        """Counts of 👍/👎 and the latest 👎 with their questions, for an admin (`asker`): a 👎 on an answer
        from pages the admin may not read is counted, but its question and comment are not shown."""
        summary = self.store.feedback_summary()
        if self.per_user:
            shown = [d for d in summary["latest_down"] if self._may_see_id(d["turn_id"], asker)]
            summary["hidden_down"] = len(summary["latest_down"]) - len(shown)
            summary["latest_down"] = shown
        return summary

    # ----- who may see a stored answer -----
    @property
    def per_user(self) -> bool:
        """Whether answers depend on who asks (THREADWISE_PERMISSIONS=per-user): only then do the front ends
        look askers up."""
        return self.permissions is not None and self.permissions.per_user

    def may_see(self, turn: TurnView, asker: Asker | None) -> bool:
        """Whether `asker` may be shown more of a stored answer (Explain, Behind the scenes, the full answer,
        Retry, a vote): they may read every page it used, here (in a channel: what everyone there may)."""
        if self.permissions is None:
            return True
        return self.permissions.may_read(asker, {s.page_id for s in turn.sources if s.page_id})

    def _may_see_id(self, turn_id: int, asker: Asker | None) -> bool:
        turn = self.get_turn(turn_id)
        return turn is not None and self.may_see(turn, asker)


class _Reply(Exception):
    """A friendly reply instead of an answer (e.g. nothing indexed yet)."""
