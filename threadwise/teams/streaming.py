"""An answer streamed into a Teams personal chat while the language model writes it (Teams' "Stream bot
messages"; only one-on-one chats stream).

    more text        → a typing activity with the text so far and a `streaminfo` entity (streamType
                       "streaming", streamSequence 1, 2, …; the first one's id is the stream's id, which every
                       later part names), at most every `interval` s (Teams throttles a stream to about one
                       update a second), each holding the one before it (Teams refuses a part that does not)
    the whole answer → a message with `streaminfo` streamType "final" and the stream's id: the answer as any
                       answer looks (citations, the AI label, 👍/👎, the sources card), replacing what streamed

A refused part (the person pressed Stop, the connector refused) ends the streaming; the answer is then sent
whole as an ordinary message, never silence. Without a language model (or when it answers whole) nothing
streams and the answer goes out as before.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from microsoft_teams.api.activities.message.message import MessageActivityInput
from microsoft_teams.api.activities.typing import TypingActivityInput
from microsoft_teams.api.models.channel_data.channel_data import ChannelData
from microsoft_teams.api.models.entity.stream_info_entity import StreamInfoEntity

from threadwise.chat.turn_views import TurnView
from threadwise.teams import cards
from threadwise.teams.activity import Place
from threadwise.teams.messenger import TeamsMessenger

log = logging.getLogger(__name__)

INTERVAL_S = 1.0


class TeamsStream:
    """One answer's stream into `place` (a personal chat), fed from the answering worker's thread."""

    def __init__(
        self,
        messenger: TeamsMessenger,
        place: Place,
        *,
        interval: float = INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.messenger = messenger
        self.place = place
        self.interval = interval
        self.clock = clock
        self.stream_id: str | None = None
        self.sequence = 0
        self.text = ""  # all the model wrote so far
        self.sent = ""  # what the last part showed
        self.failed = False
        self._last = 0.0
        self._lock = threading.Lock()

    def add(self, delta: str) -> None:
        """A new piece of the answer: sent with everything before it, at once if first, else when due."""
        with self._lock:
            if self.failed or not delta:
                return
            self.text += delta
            if self.stream_id is None or self.clock() - self._last >= self.interval:
                self._part()

    def _part(self) -> None:
        shown = cards.escape(self.text)
        if len(shown) > cards.MAX_TEXT or shown == self.sent:
            return
        self.sequence += 1
        part = TypingActivityInput(text=shown)
        part.channel_data = ChannelData(
            stream_id=self.stream_id, stream_type="streaming", stream_sequence=self.sequence
        )
        part.add_entity(
            StreamInfoEntity(stream_id=self.stream_id, stream_type="streaming", stream_sequence=self.sequence)
        )
        sent = self.messenger.send(self.place, part)
        if sent is None:
            log.info("Teams refused part %d of a stream: the answer goes out whole", self.sequence)
            self.failed = True
            return
        self.stream_id = self.stream_id or sent
        self.sent = shown
        self._last = self.clock()

    def finish(self, message: MessageActivityInput) -> str | None:
        """Send `message` (the whole answer) as the stream's final message; its id (the stream's), or None when
        nothing streamed or Teams refused (then the caller sends it as an ordinary message)."""
        with self._lock:
            if self.stream_id is None or self.failed:
                return None
            message.channel_data = message.channel_data or ChannelData()
            message.channel_data.stream_id = self.stream_id
            message.channel_data.stream_type = "final"
            message.add_entity(StreamInfoEntity(stream_id=self.stream_id, stream_type="final"))
            if self.messenger.send(self.place, message) is None:
                log.info("Teams refused a stream's final message: the answer goes out whole")
                return None
            return self.stream_id


@dataclass
class StreamedTeamsDelivery:
    """An answer in a personal chat: streamed while an LLM writes it (`on_text`), then delivered whole."""

    messenger: TeamsMessenger
    place: Place
    interval: float = INTERVAL_S
    stream: TeamsStream = field(init=False)

    def __post_init__(self) -> None:
        self.stream = TeamsStream(self.messenger, self.place, interval=self.interval)

    def on_text(self, delta: str) -> None:
        self.stream.add(delta)

    def answer(self, turn: TurnView) -> str | None:
        message = cards.answer_activity(turn)
        streamed = self.stream.finish(message)
        if streamed is not None:
            return streamed
        sent = self.messenger.send(self.place, cards.answer_activity(turn))
        if sent is None:  # e.g. a card Teams refused: the text alone, never silence
            sent = self.messenger.send(self.place, cards.notice(cards.answer_text(turn)))
        return sent

    def failure(self, text: str) -> None:
        notice = cards.notice(text)
        if self.stream.finish(notice) is None:
            self.messenger.send(self.place, cards.notice(text))

    def tell_asker(self, text: str) -> None:
        self.messenger.send(self.place, cards.notice(text))
