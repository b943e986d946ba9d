"""The Microsoft Teams adapter: the Teams SDK's App over the platform-neutral ConversationService and AdminService.

The SDK answers the HTTP request of an activity only when its handler returns, so handlers do only the quick
part and leave the slow work to a bounded pool of answer workers, which send through the server's event loop:

    message → claim the activity id (answer once) → typing indicator in the thread
            → [worker] ask → the answer as a reply in the thread (or a friendly failure)

In a channel the bot answers when mentioned, and follow-ups without a mention in threads it answered in (the
app package asks for the resource-specific consent that delivers them); in a group chat when mentioned; in a
personal chat always. Explain is an Adaptive Card `Action.Execute`; 👍/👎 are Teams' native feedback buttons.
Every press that names an answer (Explain, Try again, a suggested follow-up, a vote) goes through
`threadwise.chat.pressed`: the answer must be this conversation's and the presser allowed to see it, else only
they are told so (the invoke's answer; a vote's refusal in their personal chat).
Redelivered activities (the same id) find their claim taken in the database and are dropped. A question's
claim keeps its conversation reference: if this replica dies before answering, another one answers it
proactively (teams_handover).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from microsoft_teams.api.activities.typing import TypingActivityInput
from microsoft_teams.api.models.account import Account

from threadwise.chat.answering import Asked, Delivery, answer_in_thread, empty_question
from threadwise.chat.conversations import ConversationService, TurnView
from threadwise.chat.help_desk import is_question
from threadwise.chat.identity import WITHHELD_HINT_TEAMS, EmailDirectory
from threadwise.chat.pool import Activity, TrackedPool
from threadwise.chat.pressed import NOT_HERE, Pressed, pressed_turn, suggested, turn_number
from threadwise.db.channel_modes import ChannelMode, Expert
from threadwise.db.claims import Claim
from threadwise.permissions import Asker
from threadwise.reports.service import GapReports
from threadwise.sync.admin import AdminService
from threadwise.teams import cards, help_desk
from threadwise.teams.activity import (
    PLATFORM,
    ActivityEndpoint,
    Place,
    activity_key,
    feedback_text,
    mentions_someone_else,
    place_of,
    question_text,
)
from threadwise.teams.admin import TEAMS, admin_command, make_commands, run_command
from threadwise.teams.gaps import teams_gaps
from threadwise.teams.handover import resume_payload, resume_teams
from threadwise.teams.identity import PERSONAL, is_personal, member_email
from threadwise.teams.messenger import TeamsMessenger
from threadwise.teams.settings import TeamsSettings
from threadwise.teams.streaming import INTERVAL_S, StreamedTeamsDelivery

with warnings.catch_warnings():  # the SDK announces its preview features at import
    warnings.simplefilter("ignore")
    from microsoft_teams.apps import ActivityContext, App

log = logging.getLogger(__name__)

MESSAGES_PATH = "/api/messages"
EXPLAIN_WAIT = 4.0  # Teams gives an invoke about 5 s; a second press waits this long for a running Explain
WELCOME = (
    "Hi, I'm Threadwise. I answer questions from your team's Confluence pages, with the sources I used. "
    "In a channel, mention me: *@Threadwise how do I request a new laptop?*; here, just ask. "
    "`admin help` lists what admins can do."
)


class TeamsBot:
    """The SDK App (`.app`), its handlers, the web app it serves (`.web`), and the pool for slow work."""

    def __init__(
        self,
        *,
        conversations: ConversationService,
        admin: AdminService,
        settings: TeamsSettings,
        cloud: Any = None,  # the SDK's CloudEnvironment (default: the public cloud)
        token: Any = None,  # a token provider for outgoing calls instead of the client secret
        gap_reports: GapReports | None = None,  # admins' knowledge gaps (`admin gaps`, the digest)
    ) -> None:
        self.conversations = conversations
        self.admin = admin
        self.settings = settings
        self.commands = make_commands(admin, settings.admin_ids)
        self.emails = EmailDirectory(ttl=settings.identity_ttl)  # who asks: the member's e-mail or UPN
        self.activity = Activity()
        self.stream_interval = INTERVAL_S  # the least time between two parts of a streamed answer
        self.workers = TrackedPool(
            max_workers=settings.answer_workers, name="threadwise-teams", activity=self.activity
        )
        self.web = FastAPI(title="Threadwise for Teams")
        self.web.get("/healthz")(lambda: PlainTextResponse("ok"))
        options: dict[str, Any] = {
            "client_id": settings.client_id or None,
            "tenant_id": settings.tenant_id or None,
            "dangerously_allow_unauthenticated_requests": settings.allow_unauthenticated
            and not settings.client_id,
            "http_server_adapter": ActivityEndpoint(self.web),
            "messaging_endpoint": MESSAGES_PATH,
            "state": False,
            "telemetry": {"agent365": False},
            "cloud": cloud,
        }
        if token is not None:
            options["token"] = token
        else:
            options["client_secret"] = settings.client_secret or None
        self.app = App(**options)
        self.app.on_message(self.on_message)
        self.app.on_card_action(self.on_card_action)
        self.app.on_message_submit_feedback(self.on_feedback)
        self.app.on_conversation_update(self.on_conversation_update)
        self.app.on_activity(self.on_other)
        self.messenger = TeamsMessenger(app=self.app)  # sends from workers go through the server's loop
        self.gaps = teams_gaps(gap_reports, admin.digests, self.messenger.send)  # None without a report

    # -- background work and sending ----------------------------------------------------------------------

    def submit(self, job: Callable[[], None], what: str) -> Future[None]:
        """Run `job` in the answer pool; its exceptions are logged, never lost."""
        return self.workers.submit_logged(job, what)

    def wait_idle(self, timeout: float = 30.0) -> bool:
        return self.activity.wait_idle(timeout)

    def close(self, *, wait: bool = True) -> None:
        self.workers.shutdown(wait=wait, cancel_futures=not wait)
        if self.conversations.claims is not None:  # what is still open is another replica's to finish
            self.conversations.claims.stop()

    def serving(self, loop: asyncio.AbstractEventLoop) -> None:
        """The server runs `loop` (sends go there): from now on questions of replicas that died are answered
        here too."""
        self.messenger.loop = loop
        if self.conversations.claims is not None:
            self.conversations.claims.resume_with(f"{PLATFORM}:", self._resume)

    def _resume(self, claim: Claim, give_up: bool) -> None:
        quiet = bool(claim.payload.get("quiet"))  # auto mode's question: nothing but an answer in the channel

        def tell(place: Place, text: str) -> None:
            if quiet:
                self.messenger.tell_privately(place, f"⚠️ {text}")
            else:
                self._reply(place, f"⚠️ {text}")

        resume_teams(
            claim,
            give_up,
            answer=lambda place, text, key: self.submit(
                lambda: self._answer(place, text, key, quiet=quiet), "answering (taken over)"
            ),
            tell=tell,
            finish=self.conversations.finish_event,
        )

    # -- who asks -----------------------------------------------------------------------------------------

    def asker(self, place: Place) -> Asker:
        """Who wrote, for the permission service (from a worker thread): their e-mail is looked up only when
        answers depend on it."""
        email = None
        if self.conversations.per_user:
            email = self.emails.email(
                place.user, lambda: self.messenger.on_loop(member_email(self.app.api, place))
            )
        return Asker(email=email, private=is_personal(place))

    def pressed(self, place: Place, value: object) -> Pressed:
        """The answer a press in `place` names, if it is this conversation's and the presser may see it."""

        def may_see(turn: TurnView) -> bool:
            return self.conversations.may_see(turn, self.asker(place))

        return pressed_turn(self.conversations, value, key=place.key, may_see=may_see, user=place.user)

    def claim(self, key: str, resume: dict[str, Any] | None = None) -> str | None:
        """The claim's key the first time an activity is seen (in any process sharing the database), then
        None. `resume`: the question, kept for another replica to answer should this one die."""
        claimed = f"{PLATFORM}:{key}"
        return claimed if self.conversations.claim_event(claimed, resume=resume) else None

    # -- messages -----------------------------------------------------------------------------------------

    async def on_message(self, ctx: ActivityContext[Any]) -> None:
        activity = ctx.activity
        if activity.from_.role == "bot" or not activity.id:
            return
        place = place_of(activity)
        text = question_text(activity)
        mentioned = activity.is_recipient_mentioned()
        command = admin_command(text)
        auto = False  # answered because the channel's auto mode saw a question, not because anyone asked me
        if place.kind != "personal" and not mentioned:
            auto = command is None and await asyncio.to_thread(self._is_auto_question, place, activity, text)
            if not auto and not await asyncio.to_thread(self._is_follow_up, place, activity):
                return
        question = command is None and bool(text)
        resume = resume_payload(place, text, str(activity.id), quiet=auto) if question else None
        claimed = await asyncio.to_thread(self.claim, activity_key(place, activity.id), resume)
        if claimed is None:
            log.info("already answered activity %s (redelivered)", activity.id)
            return
        if command is not None:
            experts = help_desk.command_mentions(activity)
            self.submit(lambda: self._admin(place, command, experts), "an admin command")
            return
        if not text:
            await self.messenger.send_async(place, cards.notice(empty_question(TEAMS)))
            return
        await self._start_answer(place, text, claimed, quiet=auto)

    async def _start_answer(self, place: Place, text: str, claimed: str, *, quiet: bool = False) -> None:
        """Typing in the conversation (not where the answer may stay unposted or go to the asker alone), then
        the answer from a worker (which finishes the claim)."""
        try:
            mode = await asyncio.to_thread(self.mode_of, place)
            if not (quiet or mode.private):
                await self.messenger.send_async(place, TypingActivityInput())
        finally:
            self.submit(lambda: self._answer(place, text, claimed, quiet=quiet), "answering")

    def mode_of(self, place: Place) -> ChannelMode:
        """The help-desk mode of the place's channel (or group chat); a personal chat has none."""
        if place.kind == PERSONAL:
            return ChannelMode(place.key.channel)
        mode = self.admin.channels.get(place.key.channel)
        return mode if place.kind == "channel" else replace(mode, auto=False, private=False)

    def _is_auto_question(self, place: Place, activity: Any, text: str) -> bool:
        """A new post in a channel whose auto mode is on, that asks something and is addressed to no one else."""
        return (
            help_desk.is_top_level(place, activity)
            and not mentions_someone_else(activity)
            and is_question(text)
            and self.mode_of(place).auto
        )

    def _is_follow_up(self, place: Place, activity: Any) -> bool:
        """A message without a mention in a channel thread the bot answered in, addressed to no one else."""
        return (
            self.settings.follow_ups_without_mention
            and place.kind == "channel"
            and bool(place.key.thread)
            and place.key.thread != str(activity.id)
            and not mentions_someone_else(activity)
            and self.conversations.knows_thread(place.key)
        )

    def _answer(self, place: Place, text: str, claimed: str | None = None, *, quiet: bool = False) -> None:
        try:
            self._answer_now(place, text, quiet=quiet)
        finally:
            self.conversations.finish_event(claimed)

    def _answer_now(self, place: Place, text: str, *, quiet: bool = False) -> None:
        mode = self.mode_of(place)
        delivery: Delivery = TeamsDelivery(messenger=self.messenger, place=place)
        if is_personal(place):  # only one-on-one chats stream (with an LLM)
            delivery = StreamedTeamsDelivery(
                messenger=self.messenger, place=place, interval=self.stream_interval
            )
        elif quiet or not mode.is_default:
            delivery = help_desk.HelpDeskDelivery(
                messenger=self.messenger, place=place, mode=mode, quiet=quiet
            )
        answer_in_thread(
            Asked(key=place.key, text=text, user=place.user, private=is_personal(place)),
            conversations=self.conversations,
            admin=self.admin,
            asker=self.asker(place),
            delivery=delivery,
            markup=TEAMS,
            withheld_hint=WITHHELD_HINT_TEAMS,
        )

    def _admin(self, place: Place, command: str, mentions: Sequence[Expert] = ()) -> None:
        run_command(
            self.commands,
            command,
            user=place.user,
            channel=place.key.channel,
            reply=lambda text: self._reply(place, text),
            feedback=lambda: self.conversations.feedback_summary(self.asker(place)),
            gaps=partial(self.gaps.run, place=place) if self.gaps else None,
            mentions=mentions,
        )

    def _reply(self, place: Place, text: str) -> None:
        self.messenger.send(place, cards.notice(text))

    # -- Explain ------------------------------------------------------------------------------------------

    async def on_card_action(self, ctx: Any) -> Any:
        """Explain, a suggested follow-up, or Try again, on an answer of this conversation the presser may see;
        the invoke's answer (a refusal too) shows to the person who pressed only."""
        action = ctx.activity.value.action
        data = action.data if isinstance(action.data, dict) else {}
        if action.verb in help_desk.VERBS:
            return await self._help_desk_press(ctx.activity, action.verb, data)
        if action.verb not in (cards.EXPLAIN, cards.RETRY, cards.ASK):
            log.info("ignored card action %r", action.verb)
            return cards.message_response("This button does nothing any more.")
        place = place_of(ctx.activity)
        pressed = await asyncio.to_thread(self.pressed, place, data.get("turn_id"))
        if pressed.turn is None:
            return cards.message_response(pressed.refusal or "This button does not name an answer.")
        turn, turn_id = pressed.turn, pressed.turn.turn_id
        if action.verb == cards.ASK:
            question = suggested(turn, data.get("follow_up"), shown=cards.MAX_FOLLOW_UPS)
            if question is None:
                return cards.message_response("This button does not name a question I suggested.")
            return await self._ask_pressed(ctx.activity, question)
        if action.verb == cards.RETRY:
            return await self._ask_pressed(ctx.activity, turn.question, claim=f"retry:{turn_id}")
        message_id = str(ctx.activity.reply_to_id or "")
        if await asyncio.to_thread(self.claim, f"explain:{turn_id}"):
            self.submit(lambda: self._explain(place, turn_id, message_id), "explaining")
            note = "Working out which sources caused this answer; I'll post it in this conversation."
            return cards.card_response(cards.answer_card(turn, explain_state="running", note=note))
        try:  # pressed before: the stored result, at once (or after the running Explain finishes)
            view = await asyncio.wait_for(
                asyncio.to_thread(self.conversations.explain, turn_id), EXPLAIN_WAIT
            )
        except TimeoutError:
            return cards.message_response(
                "Still working on the explanation; it will appear in this conversation."
            )
        return cards.card_response(cards.explanation_card(turn, view))

    async def _help_desk_press(self, activity: Any, verb: str, data: dict[str, Any]) -> Any:
        """Share to channel, Keep to myself, Still need help? and Mark resolved (`threadwise.teams.help_desk`)."""
        place = place_of(activity)
        name = str(activity.from_.name or place.user)
        if verb == help_desk.RESOLVE:
            return await asyncio.to_thread(self._resolve, place, data.get("escalation_id"), name)
        pressed, key = await asyncio.to_thread(
            help_desk.own_turn, self.conversations, place, data.get("turn_id"), pressed=self.pressed
        )
        if pressed.turn is None or key is None:
            return cards.message_response(pressed.refusal or "This button does not name an answer.")
        turn = pressed.turn
        thread = help_desk.thread_place(place, key) if place.kind == PERSONAL else place
        if verb == help_desk.ESCALATE:
            return await asyncio.to_thread(self._escalate, thread, turn, name)
        if place.kind != PERSONAL:  # Share and Keep are buttons of a private answer only
            return cards.message_response(NOT_HERE)
        if verb == help_desk.KEEP_VERB:
            note = "Kept to yourself: nothing was posted in the channel."
            return cards.card_response(help_desk.private_card(turn, buttons=False, escalate=False, note=note))
        if await asyncio.to_thread(self.claim, f"share:{turn.turn_id}") is None:
            return cards.message_response("This answer is in the channel already.")
        sent = await self.messenger.send_async(thread, help_desk.shared_answer(turn, name))
        if sent is None:
            return cards.message_response("Teams refused the message: nothing was shared.")
        await asyncio.to_thread(self.conversations.set_message_ref, turn.turn_id, sent)
        note = "Shared in the channel thread."
        return cards.card_response(help_desk.private_card(turn, buttons=False, escalate=False, note=note))

    def _escalate(self, thread: Place, turn: TurnView, name: str) -> Any:
        """Call the channel's experts into the thread, once per thread until resolved (from a worker thread)."""
        channels = self.admin.channels
        mode = channels.get(thread.key.channel)
        if not mode.experts:
            return cards.message_response(
                "Nobody is set to be called in from this channel (an admin sets them: `admin experts @…`)."
            )
        already = "The experts were called in already: see the thread."
        if channels.open_escalation(channel=thread.key.channel, thread=thread.key.thread) is not None:
            return cards.message_response(already)
        if self.claim(f"escalate:{turn.turn_id}") is None:
            return cards.message_response(already)
        stored = self.conversations.store.turn(turn.turn_id)
        escalation = channels.escalate(
            platform=PLATFORM,
            channel=thread.key.channel,
            thread=thread.key.thread,
            turn_id=turn.turn_id,
            asker=stored.asked_by if stored is not None else thread.user,
            question=turn.question,
            opened_by=thread.user,
        )
        asker = Account(id=thread.user_id or thread.user, name=name)
        message = help_desk.escalation_message(
            turn=turn, experts=mode.experts, asker=asker, escalation_id=escalation
        )
        sent = self.messenger.send(thread, message)
        if sent is not None:
            channels.note_message(escalation, sent)
        return cards.message_response("I called the experts in, in the thread.")

    def _resolve(self, place: Place, value: object, name: str) -> Any:
        """Mark resolved: the escalation must be this thread's; closed once."""
        channels = self.admin.channels
        number = turn_number(value)
        escalation = channels.get_escalation(number) if number is not None else None
        if escalation is None or (escalation.channel, escalation.thread) != (
            place.key.channel,
            place.key.thread,
        ):
            return cards.message_response(NOT_HERE)
        if not channels.resolve(escalation.id, by=place.user):
            return cards.message_response("This was marked resolved already.")
        return cards.card_response(help_desk.resolved_card(name))

    def _offer_help(self, place: Place, turn: TurnView, ref: str) -> None:
        """After a 👎 in a channel with experts: Still need help? under the answer (once per answer)."""
        if turn.not_found or not ref or not self.mode_of(place).experts:
            return
        if self.claim(f"offer-help:{turn.turn_id}") is None:
            return
        message = help_desk.with_escalation(cards.answer_activity(turn), turn)
        message.id = ref
        self.messenger.send(place, message)

    async def _ask_pressed(self, activity: Any, question: str, *, claim: str | None = None) -> Any:
        """Ask `question` in the conversation of the pressed card, once per card and question."""
        place = place_of(activity)
        digest = hashlib.sha1(question.encode()).hexdigest()[:12]
        key = activity_key(place, claim or f"ask:{activity.reply_to_id}:{digest}")
        resume = resume_payload(place, question, str(activity.id or ""))
        claimed = await asyncio.to_thread(self.claim, key, resume)
        if claimed is None:
            return cards.message_response("I asked that already: the answer is in this conversation.")
        await self._start_answer(place, question, claimed)
        return cards.message_response(f"Asking: {question}")

    def _explain(self, place: Place, turn_id: int, message_id: str) -> None:
        """Post the explanation; mark Explain done on the answer's own message (no other message is updated)."""
        view = self.conversations.explain(turn_id)
        self.messenger.send(place, cards.explanation_activity(view))
        turn = self.conversations.get_turn(turn_id)
        own = bool(message_id) and self.conversations.turn_for_message(place.key, message_id) == turn_id
        if turn is not None and own and not view.error:
            answer = cards.answer_activity(turn, explain_state="done")
            answer.id = message_id
            self.messenger.send(place, answer)

    # -- feedback, conversation updates, the rest ---------------------------------------------------------

    async def on_feedback(self, ctx: Any) -> Any:
        activity = ctx.activity
        value = activity.value.action_value
        vote = "up" if value.reaction == "like" else "down"
        comment = feedback_text(value.feedback)
        place = place_of(activity)
        ref = str(activity.reply_to_id or "")
        turn_id = await asyncio.to_thread(self.conversations.turn_for_message, place.key, ref)
        pressed = await asyncio.to_thread(self.pressed, place, turn_id)
        if pressed.turn is None:  # the invoke's answer shows nothing: the refusal goes to the personal chat
            refusal = pressed.refusal or NOT_HERE
            self.submit(lambda: self.messenger.tell_privately(place, refusal), "refusing a vote")
            return {"status": 200}
        turn = pressed.turn
        await asyncio.to_thread(self.conversations.vote, turn.turn_id, place.user, vote, comment)
        if vote == "down" and place.kind != PERSONAL:
            self.submit(lambda: self._offer_help(place, turn, ref), "offering the experts")
        return {"status": 200}

    async def on_conversation_update(self, ctx: ActivityContext[Any]) -> None:
        activity = ctx.activity
        added = [m.id for m in activity.members_added or []]
        if activity.recipient.id not in added or not activity.id:
            return
        place = place_of(activity)
        if await asyncio.to_thread(self.claim, activity_key(place, activity.id)):
            await self.messenger.send_async(place, cards.notice(WELCOME))

    async def on_other(self, ctx: ActivityContext[Any]) -> None:
        activity = ctx.activity
        log.info("ignored a Teams activity of type %s %s", activity.type, getattr(activity, "name", "") or "")


@dataclass(frozen=True)
class TeamsDelivery:
    """An answer in Teams: a reply in the conversation (its text alone when the card is refused), a private
    note in the asker's personal chat."""

    messenger: TeamsMessenger
    place: Place

    def answer(self, turn: TurnView) -> str | None:
        sent = self.messenger.send(self.place, cards.answer_activity(turn))
        if sent is None:  # e.g. a card the channel refused: the text alone, never silence
            sent = self.messenger.send(self.place, cards.notice(cards.answer_text(turn)))
        return sent

    def failure(self, text: str) -> None:
        self.messenger.send(self.place, cards.notice(text))

    def tell_asker(self, text: str) -> None:
        self.messenger.tell_privately(self.place, text)
