"""An answer streamed into its Slack thread while the language model writes it (chat.*Stream).

Streamed where no placeholder waits to be replaced (an assistant thread shows a status instead): a
placeholder's ts is what retries, hand-over between replicas and the buttons point at, so there the answer
replaces it whole, as before.

    first text      → chat.startStream (channel, thread_ts, recipient_team_id, recipient_user_id, markdown_text)
    more text       → chat.appendStream, at most every `interval` s unless `chars` characters are waiting
    the whole answer → chat.stopStream with the rest of the text and the answer's blocks under it (sources,
                      Explain, 👍/👎); when the turn is not what was streamed (the model failed mid-way and the
                      offline answerer answered, a failure) the message is replaced by the whole answer

Slack wants the recipient's team and user when streaming to a channel (`missing_recipient_*` otherwise).
Nothing here raises into the answering: a refused stream call is logged and the answer is delivered whole
(the placeholder updated, or the streamed message, or a new message), never silence.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from threadwise.chat.turn_views import TurnView
from threadwise.slack import blocks
from threadwise.slack.messenger import SlackMessenger, why
from threadwise.slack.question import Question

log = logging.getLogger(__name__)

INTERVAL_S = 0.5  # the least time between two chat.appendStream calls (Slack rate-limits them)
CHARS = 400  # unless this much text is waiting


class AnswerStream:
    """One answer's stream. `add` is called with each new piece of text, `stop` at the end (`finish_streamed`).
    Used by one answering worker at a time; the lock only guards against a late `add` from another thread."""

    def __init__(
        self,
        client: WebClient,
        question: Question,
        *,
        interval: float = INTERVAL_S,
        chars: int = CHARS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.question = question
        self.interval = interval
        self.chars = chars
        self.clock = clock
        self.ts: str | None = None  # the streamed message, once started
        self.failed = False  # a stream call was refused: the rest is delivered whole
        self.stopped = False
        self.streamed = ""  # the text sent to Slack so far
        self._waiting = ""
        self._last = 0.0
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """Whether a streamed message is open in the thread."""
        return self.ts is not None and not self.stopped

    @property
    def text(self) -> str:
        """All the text handed to the stream: sent, and still waiting to be sent."""
        return self.streamed + self._waiting

    def add(self, delta: str) -> None:
        """A new piece of the answer's text: sent at once if it is the first, else when due."""
        with self._lock:
            if self.failed or self.stopped or not delta:
                return
            self._waiting += delta
            if self.ts is None:
                self._start()
            elif len(self._waiting) >= self.chars or self.clock() - self._last >= self.interval:
                self._append()

    def _start(self) -> None:
        q = self.question
        text = self._waiting
        try:
            reply = self.client.chat_startStream(
                channel=q.channel,
                thread_ts=q.thread_ts,
                recipient_team_id=q.user_team or q.team or None,
                recipient_user_id=q.user,
                markdown_text=text,
            )
        except Exception as err:  # never into the model's stream: the answer is then delivered whole
            self._fail("chat.startStream", err)
            return
        self.ts = str(reply["ts"])
        self._sent(text)

    def _append(self) -> None:
        text = self._waiting
        try:
            self.client.chat_appendStream(channel=self.question.channel, ts=str(self.ts), markdown_text=text)
        except Exception as err:
            self._fail("chat.appendStream", err)
            return
        self._sent(text)

    def _sent(self, text: str) -> None:
        self.streamed += text
        self._waiting = ""
        self._last = self.clock()

    def _fail(self, method: str, err: Exception) -> None:
        reason = why(err) if isinstance(err, SlackApiError) else repr(err)
        log.warning(
            "%s in %s failed (the answer is delivered whole): %s", method, self.question.channel, reason
        )
        self.failed = True

    def stop(self, *, blocks_: list[dict[str, Any]] | None = None) -> bool:
        """Send what is waiting and close the stream, with `blocks_` under the text; False if Slack refused."""
        with self._lock:
            if not self.active:
                return False
            self.stopped = True
            arguments: dict[str, Any] = {"channel": self.question.channel, "ts": self.ts}
            if self._waiting:
                arguments["markdown_text"] = self._waiting
            if blocks_:
                arguments["blocks"] = blocks_
            try:
                self.client.chat_stopStream(**arguments)
            except Exception as err:
                self._fail("chat.stopStream", err)
                return False
            self._sent(self._waiting)
            return True


def tail_blocks(message: blocks.Message) -> list[dict[str, Any]]:
    """The blocks of an answer message after its text (sources, confidence, follow-ups, the buttons): what
    goes under a streamed answer, whose text Slack already shows."""
    found = list(message.get("blocks") or [])
    first = next((i for i, b in enumerate(found) if b.get("type") != "section"), len(found))
    return found[first:]


def finish_streamed(stream: AnswerStream, messenger: SlackMessenger, turn: TurnView) -> str | None:
    """Close an open stream with the answer's blocks; the ts of the message that holds the answer (None when
    Slack refused everything). The streamed text stays when it is the turn's answer; otherwise (a fallback
    answer, not found, a failure) the message is replaced by the whole answer."""
    q = stream.question
    whole = blocks.answer_message(turn)
    same = not turn.error and not turn.not_found and stream.text.strip() == turn.answer.strip()
    if same and stream.stop(blocks_=tail_blocks(whole)):
        return stream.ts
    if stream.active:
        stream.stop()  # whatever Slack says, the message is replaced below
    plainer = lambda: blocks.answer_message(turn, feedback_buttons=False)  # noqa: E731
    return messenger.deliver(q.channel, q.thread_ts, stream.ts, whole, plainer=plainer)
