"""The Slack adapter: a Bolt app over the platform-neutral ConversationService and the AdminService.

Slack re-sends an event that is not acknowledged within 3 s, so every listener acknowledges at once (Bolt
acks events before the listener runs) and leaves slow work to a bounded pool of answer workers:

    mention → ack → claim the message (answer once) → placeholder in the thread (< 1 s)
            → [worker] ask → chat.update the placeholder with the answer (or a friendly failure)

A message is claimed by (team, channel, ts) in the database, so Slack's retries (X-Slack-Retry-Num, the
same event_id) and a mention that arrives both as `app_mention` and as `message` are answered once, even
across processes. Buttons and the slash command are in `slack_actions`.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass, replace
from typing import Any

from slack_bolt import App
from slack_sdk import WebClient

from threadwise.chat.answering import Asked, answer_in_thread
from threadwise.chat.conversations import ConversationService
from threadwise.chat.identity import WITHHELD_HINT
from threadwise.chat.pool import Activity, Admission, FairPool, TrackedPool
from threadwise.chat.turn_views import TurnView
from threadwise.db.claims import Claim
from threadwise.reports.service import GapReports
from threadwise.slack import blocks
from threadwise.slack.actions import ActionContext, register_actions
from threadwise.slack.admins import AdminCheck, slack_commands
from threadwise.slack.assistant import assistant_for
from threadwise.slack.gaps import home_blocks, slack_gaps
from threadwise.slack.gaps import register as register_gaps
from threadwise.slack.handover import INBOX, inbox_key, placeholder_ref, replay_received, resume_slack
from threadwise.slack.help_desk import SlackHelpDesk
from threadwise.slack.home import home_view
from threadwise.slack.identity import SlackAskers, slack_directory
from threadwise.slack.installation import Installation
from threadwise.slack.messenger import SlackMessenger
from threadwise.slack.mrkdwn import SLACK, mentions_other_user
from threadwise.slack.question import PLATFORM, Question, question_of, refusal_of
from threadwise.slack.settings import SlackSettings, make_client
from threadwise.slack.streaming import AnswerStream, finish_streamed
from threadwise.slack.thread import thread_context
from threadwise.sync.admin import AdminService

log = logging.getLogger(__name__)

_ANSWERED_SUBTYPES = (None, "thread_broadcast", "file_share")


class SlackBot:
    """The Bolt app (`.app`), its listeners, and the pool that does the slow work."""

    def __init__(
        self,
        *,
        conversations: ConversationService,
        admin: AdminService,
        settings: SlackSettings,
        client: WebClient | None = None,
        request_verification: bool = True,
        ready: threading.Event | None = None,
        gap_reports: GapReports | None = None,
    ) -> None:
        """`gap_reports`: the knowledge-gap report, for admins (Home tab, `gaps`, `digest`); None: none."""
        self.conversations = conversations
        self.admin = admin
        self.settings = settings
        self.client = client or make_client(settings)
        self.messenger = SlackMessenger(client=self.client)
        self.is_admin = AdminCheck(
            client=self.client,
            admin_user_ids=settings.admin_user_ids,
            workspace_admins=settings.workspace_admins,
        )
        self.gaps = slack_gaps(self.client, gap_reports, admin.digests)  # None without a report
        extra = self.gaps.commands() if self.gaps else None  # `gaps` and `digest`, for admins
        self.commands = slack_commands(admin=admin, is_admin=self.is_admin, extra=extra)
        # Bolt runs listeners in `listeners`; they only ack, claim and post the placeholder. The slow work
        # (answers, explanations, syncs) waits its turn in `workers`.
        self.activity = Activity()
        self._claims = threading.Lock()
        self.listeners = TrackedPool(max_workers=32, name="threadwise-listener", activity=self.activity)
        self.workers = FairPool(
            max_workers=settings.answer_workers, name="threadwise-answer", activity=self.activity
        )
        # Answers wait for this: `serve` clears it, loads the models and the index, then sets it.
        self.ready = ready if ready is not None else threading.Event()
        if ready is None:
            self.ready.set()
        self.installation = Installation(
            client=self.client,
            team=settings.team_id,
            app=settings.app_id,
            allow_external_users=settings.allow_external_users,
        )
        self.askers = SlackAskers(  # who asks: users.info's e-mail
            directory=slack_directory(self.client, ttl=settings.identity_ttl), conversations=conversations
        )
        self.admission = Admission(pool=self.workers, limit=settings.max_questions_per_user)
        bolt_log = logging.getLogger("threadwise.bolt")
        bolt_log.addFilter(_quiet_token_note)
        self.app = App(
            client=self.client,
            signing_secret=settings.signing_secret,
            token_verification_enabled=False,  # auth.test happens on the first request (and in `doctor`)
            request_verification_enabled=request_verification,
            process_before_response=False,
            listener_executor=self.listeners,
            logger=bolt_log,
            name="threadwise",
        )
        self.app.use(self.installation.only_this)
        self.app.use(  # the assistant view: greeting, suggested prompts, its threads' questions
            assistant_for(
                admin=admin,
                external=self.installation.external,
                start_answer=self.start_answer,
                finish_claim=self.finish_claim,
            )
        )
        self.app.event("app_mention")(self.on_mention)
        self.app.event("message")(self.on_message)
        self.app.event("app_home_opened")(self.on_home_opened)
        if self.gaps is not None:
            register_gaps(self.app, self.gaps, is_admin=self.is_admin, submit=self.submit)
        self.help_desk = SlackHelpDesk(self)  # auto, private-first and experts channels (issue 30)
        self.help_desk.register(self.app)
        register_actions(
            self.app,
            ActionContext(
                messenger=self.messenger,
                conversations=conversations,
                commands=self.commands,
                submit=self.submit,
                start_answer=self.start_answer,
                claim=self.claim,
                may_see=self.askers.may_see,
                external=self.installation.presser_external,
                down_voted=self.help_desk.down_voted,
            ),
        )
        self.app.error(self.on_error)
        if conversations.claims is not None:  # questions of a replica that died are answered here
            conversations.claims.resume_with(f"{PLATFORM}:", self._resume)

    # -- background work --------------------------------------------------------------------------------

    def submit(self, job: Callable[[], None], what: str, *, owner: str = "") -> Future[None]:
        """Run `job` in the answer pool, fairly among owners (users); its exceptions are logged, never lost."""
        return self.workers.submit_logged(job, what, owner=owner)

    def learn_installation(self) -> None:
        """Learn the workspace and app installed as (`serve` does at start); others' requests are dropped."""
        self.installation.learn()

    @property
    def waiting(self) -> int:
        """Jobs that have not found a worker yet."""
        return self.workers.waiting

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until no listener and no background job is left (tests, benchmarks, shutdown)."""
        return self.activity.wait_idle(timeout)

    def close(self, *, wait: bool = True) -> None:
        self.ready.set()  # questions held for the warm-up are answered (or dropped) rather than left waiting
        self.workers.shutdown(wait=wait, cancel_futures=not wait)
        self.listeners.shutdown(wait=wait, cancel_futures=not wait)
        if self.conversations.claims is not None:  # what is still open is another replica's to finish
            self.conversations.claims.stop()

    # -- events ---------------------------------------------------------------------------------------

    def on_mention(self, body: dict[str, Any], event: dict[str, Any], context: Any) -> None:
        try:
            self._mention(body, event, context)
        finally:
            self.finish_claim(inbox_key(PLATFORM, body))

    def on_message(self, body: dict[str, Any], event: dict[str, Any], context: Any) -> None:
        try:
            self._message(body, event, context)
        finally:
            self.finish_claim(inbox_key(PLATFORM, body))

    def _mention(self, body: dict[str, Any], event: dict[str, Any], context: Any) -> None:
        if event.get("bot_id") or event.get("subtype") not in _ANSWERED_SUBTYPES:
            return
        question = question_of(body, event, context)
        if question is None:
            log.info("ignored an app_mention without channel, user or ts: %s", body.get("event_id"))
            return
        question = replace(question, external=self.installation.external(body, event))
        claim = f"{question.team}:{question.channel}:{event['ts']}"
        if not self.help_desk.takes(question, claim=claim):
            self.start_answer(question, claim=claim)

    def _message(self, body: dict[str, Any], event: dict[str, Any], context: Any) -> None:
        """DMs are conversations; in channels, a reply in a thread the bot answered in is a follow-up."""
        if event.get("bot_id") or event.get("subtype") not in _ANSWERED_SUBTYPES:
            return
        question = question_of(body, event, context)
        if question is None or not question.text:  # e.g. a file shared without a word: not a question
            return
        question = replace(question, external=self.installation.external(body, event))
        claim = f"{question.team}:{question.channel}:{event['ts']}"
        if event.get("channel_type") != "im":
            if event.get("thread_ts") in (None, event.get("ts")):  # top level: auto channels answer questions
                self.help_desk.top_level(question, event, claim=claim, bot_user=context.bot_user_id or "")
                return
            if not self.settings.follow_ups_without_mention:
                return
            if mentions_other_user(event.get("text", ""), context.bot_user_id or ""):
                return  # people talking to each other in the thread
            if not self.conversations.knows_thread(question.key):
                return  # never in threads the bot was not invited into
            if self.help_desk.takes(question, claim=claim, follow_up=True):
                return
        self.start_answer(question, claim=claim)

    def on_home_opened(self, event: dict[str, Any]) -> None:
        user = event.get("user")
        if event.get("tab", "home") != "home" or not isinstance(user, str) or not user.strip():
            return  # no one to publish it for (Slack refuses the call)
        self.submit(lambda: self.publish_home(user), "publishing the Home tab", owner=user)

    def publish_home(self, user: str) -> None:
        admin = self.is_admin(user)
        view = home_view(
            spaces=self.admin.status(),
            folders=self.admin.folder_status(),
            is_admin=admin,
            feedback=self.conversations.feedback_summary(self.askers.asker(user, private=True))
            if admin
            else None,
            gaps=home_blocks(self.gaps.reports) if admin and self.gaps else (),
            channels=self.admin.channels.all(platform=PLATFORM) if admin else (),
            escalations=self.admin.channels.counts() if admin else None,
        )
        self.client.views_publish(user_id=user, view=view)

    def on_error(self, error: Exception, body: dict[str, Any]) -> None:
        """One line per failure (hostile payloads must not flood the log); the traceback at debug level."""
        kind = body.get("type") if isinstance(body, dict) else None
        log.error("Slack listener failed on %s: %s", kind, type(error).__name__)
        log.debug("the failure", exc_info=error)

    def claim(self, key: str, resume: dict[str, Any] | None = None) -> bool:
        """True the first time `key` is claimed (in this or any process sharing the database), then False.
        `resume`: the question, kept with the claim for another replica to answer should this one die.

        Claims go one at a time: SQLite serialises writers anyway, and 20 threads contending for its write
        lock wait in its busy handler (back-offs up to 100 ms each) far longer than they wait in this queue.
        """
        with self._claims:
            return bool(self.conversations.claim_event(f"{PLATFORM}:{key}", resume=resume))

    def _resume(self, claim: Claim, give_up: bool) -> None:
        if claim.key.startswith(f"{PLATFORM}:{INBOX}:"):
            replay_received(self.app, claim, self.finish_claim)
            return

        def answer(question: Question, ts: str | None, claimed: str) -> None:
            self.submit(
                lambda: self._answer(question, ts, claimed), "answering (taken over)", owner=question.user
            )

        resume_slack(claim, give_up, messenger=self.messenger, answer=answer, finish=self.finish_claim)

    def finish_claim(self, claimed: str | None) -> None:
        self.conversations.finish_event(claimed)

    # -- answering ----------------------------------------------------------------------------------

    def start_answer(
        self,
        question: Question,
        *,
        claim: str | None,
        placeholder_ts: str | None = None,
        announce: Callable[[], None] | None = None,
    ) -> bool:
        """Answer `question` in its thread unless `claim` was taken before; False when it was a repeat.
        A question without a claim of its own (a button's) gets one when replicas hand questions over.
        `announce`: what shows the asker it is being answered instead of a placeholder message (an assistant
        thread's status, set before anything is posted); the answer then comes as a new message."""
        if claim is None and self.conversations.claims is not None:
            claim = f"ask:{uuid.uuid4().hex}"
        resume = {**asdict(question), "placeholder_ts": placeholder_ts}
        if claim is not None and not self.claim(claim, resume=resume):
            log.info("already answered %s (a retry or a duplicate event)", claim)
            return False
        claimed = f"{PLATFORM}:{claim}" if claim is not None else None
        submitted = False
        refusal = refusal_of(question, max_chars=self.settings.max_question_chars) or self.admission.reserve(
            question.user
        )
        try:
            if refusal is not None:
                self.messenger.post(question.channel, question.thread_ts, blocks.notice_message(refusal))
                return True
            try:
                ref = placeholder_ref(claimed) if claimed is not None else ""
                placeholder = blocks.placeholder_message(question.text, waiting=self.waiting, ref=ref)
                if announce is not None:
                    announce()
                elif placeholder_ts is not None:
                    placeholder_ts = self.messenger.deliver(
                        question.channel, question.thread_ts, placeholder_ts, placeholder
                    )
                else:
                    placeholder_ts = self.messenger.post(question.channel, question.thread_ts, placeholder)
                ts = placeholder_ts
                if claimed is not None and self.conversations.claims is not None and ts is not None:
                    self.conversations.claims.note(claimed, placeholder_ts=ts)
                self.submit(lambda: self._answer(question, ts, claimed), "answering", owner=question.user)
                submitted = True
            finally:
                self.admission.release(question.user)
        finally:
            if not submitted:  # refused (and told so), or failed before its answer was queued
                self.finish_claim(claimed)
        return True

    def _answer(self, question: Question, placeholder_ts: str | None, claimed: str | None = None) -> None:
        try:
            self._answer_now(question, placeholder_ts)
        finally:
            self.finish_claim(claimed)

    def _answer_now(self, question: Question, placeholder_ts: str | None) -> None:
        self.ready.wait()
        answer_in_thread(
            Asked(key=question.key, text=question.text, user=question.user, private=question.private),
            conversations=self.conversations,
            admin=self.admin,
            asker=self.askers.asker(question.user, private=question.private),
            delivery=self.delivery(question, placeholder_ts),
            markup=SLACK,
            withheld_hint=WITHHELD_HINT,
            thread_messages=thread_context(self.client, self.conversations, question),
        )

    def delivery(self, question: Question, placeholder_ts: str | None) -> SlackDelivery:
        """The answer replaces its placeholder; without one (an assistant thread) it is streamed."""
        if placeholder_ts is not None:
            return SlackDelivery(messenger=self.messenger, question=question, placeholder_ts=placeholder_ts)
        stream = AnswerStream(self.client, question)
        return StreamedSlackDelivery(self.messenger, question, None, stream=stream)


@dataclass(frozen=True)
class SlackDelivery:
    """An answer in Slack: its placeholder updated (or a new message), a private note as an ephemeral."""

    messenger: SlackMessenger
    question: Question
    placeholder_ts: str | None

    def answer(self, turn: TurnView) -> str | None:
        q = self.question
        return self.messenger.deliver(
            q.channel,
            q.thread_ts,
            self.placeholder_ts,
            blocks.answer_message(turn),
            plainer=lambda: blocks.answer_message(turn, feedback_buttons=False),
        )

    def failure(self, text: str) -> None:
        q = self.question
        self.messenger.deliver(q.channel, q.thread_ts, self.placeholder_ts, blocks.notice_message(text))

    def tell_asker(self, text: str) -> None:
        q = self.question
        self.messenger.ephemeral(q.channel, q.user, q.thread_ts, blocks.notice_message(text))


@dataclass(frozen=True)
class StreamedSlackDelivery(SlackDelivery):
    """An answer with no placeholder to replace (an assistant thread shows a status instead): a language
    model's text is streamed as it is written (`streaming.AnswerStream`) and the finished message gets the
    answer's blocks; an answer written whole (offline, not found) is posted whole."""

    stream: AnswerStream | None = None

    def on_text(self, delta: str) -> None:
        if self.stream is not None:
            self.stream.add(delta)

    def answer(self, turn: TurnView) -> str | None:
        if self.stream is not None and self.stream.ts is not None:
            return finish_streamed(self.stream, self.messenger, turn)
        return super().answer(turn)

    def failure(self, text: str) -> None:
        if self.stream is None or self.stream.ts is None:
            return super().failure(text)
        self.stream.stop()
        q = self.question
        self.messenger.deliver(q.channel, q.thread_ts, self.stream.ts, blocks.notice_message(text))


def _quiet_token_note(record: logging.LogRecord) -> bool:
    """Drop Bolt's note that SLACK_BOT_TOKEN (which it reads from the environment itself) yields to our client."""
    return "`token` will be unused" not in record.getMessage()


def build_slack_bot(
    *,
    conversations: ConversationService,
    admin: AdminService,
    settings: SlackSettings,
    client: WebClient | None = None,
    gap_reports: GapReports | None = None,
) -> SlackBot:
    """The Slack bot, ready for Socket Mode (`serve.run_socket_mode`) or HTTP (`serve.run_http`)."""
    return SlackBot(
        conversations=conversations, admin=admin, settings=settings, client=client, gap_reports=gap_reports
    )
