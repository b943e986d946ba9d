"""`threadwise teams package`: the Teams app package, a zip of manifest.json and two icons, to upload in Teams.

The manifest (schema 1.20) names the Azure Bot's app id as the bot, in personal, team and group-chat scopes,
with prompt starters (example questions, then the admin commands; Teams shows them in a personal chat and
in the @mention menu of channels and group chats), and asks for exactly the resource-specific consent the
bot uses: the messages of the channels and chats it is added to, without a mention (follow-ups in a thread,
and a help-desk channel's questions in auto mode). Version 1.1.0 is the first to carry the starters: Teams
takes an upload only with a higher version. The icons are
drawn here: a 192×192 colour icon and a 32×32 white-on-transparent outline, as Teams requires.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

SCHEMA_VERSION = "1.20"
SCHEMA = (
    f"https://developer.microsoft.com/en-us/json-schemas/teams/v{SCHEMA_VERSION}/MicrosoftTeams.schema.json"
)
ACCENT = (0x3B, 0x5B, 0xDB)  # the colour icon's background, also the manifest's accentColor
SCOPES = ["personal", "team", "groupChat"]
VERSION = "1.1.0"
MAX_TITLE = 32  # schema 1.20: a command's title is at most 32 characters, a list at most 10 commands
STARTERS = [  # prompt starters: a title is what lands in the compose box when picked
    ("How do I request a new laptop?", "Ask anything your Confluence pages answer; I cite the pages I used"),
    ("Who approves travel expenses?", "A question about a process: I answer with its page"),
    ("How many vacation days do I get?", "Policies and numbers, from the pages your admins chose"),
]
COMMANDS = [
    ("admin status", "What I know: spaces, pages, last sync"),
    ("admin spaces", "The Confluence spaces I sync"),
    ("admin help", "All admin commands"),
]
CHANNEL_COMMANDS = [
    ("admin auto", "Answer questions here without a mention (admins: on/off)"),
    ("admin private", "Answers go to the asker first, with Share (admins: on/off)"),
    ("admin experts", "Whom Still need help? calls in here (admins: @people)"),
]
# the resource-specific consent the bot uses, and for what (doctor lists them)
RSC_USES = {
    "ChannelMessage.Read.Group": "channel posts without a mention: follow-ups in a thread, auto mode's questions",
    "ChatMessage.Read.Chat": "group-chat follow-ups without a mention",
}
RSC_PERMISSIONS = list(RSC_USES)


def command_lists() -> list[dict[str, Any]]:
    """One list per scope (the schema allows three): example questions and the admin commands everywhere, a
    channel's help-desk commands in teams."""

    def listed(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
        return [{"title": t, "description": d} for t, d in pairs]

    return [
        {"scopes": ["personal"], "commands": listed(STARTERS + COMMANDS)},
        {"scopes": ["team"], "commands": listed(STARTERS + COMMANDS + CHANNEL_COMMANDS)},
        {"scopes": ["groupChat"], "commands": listed(STARTERS + COMMANDS)},
    ]


def missing_permissions(declared: Iterable[str]) -> list[str]:
    """The resource-specific permissions the bot uses that `declared` (a manifest's) lacks."""
    have = set(declared)
    return [name for name in RSC_PERMISSIONS if name not in have]


def declared_permissions(manifest_json: dict[str, Any]) -> list[str]:
    """The resource-specific permissions a manifest asks for."""
    granted = manifest_json.get("authorization", {}).get("permissions", {}).get("resourceSpecific", [])
    return [str(p.get("name")) for p in granted if isinstance(p, dict)]


def manifest(*, bot_id: str, domains: Iterable[str] = (), version: str = VERSION) -> dict[str, Any]:
    """The app manifest for the bot `bot_id` (the Azure Bot's Microsoft App ID, also the app's id)."""
    if not bot_id:
        raise ValueError("TEAMS_CLIENT_ID is not set: the package names the Azure Bot's app id as its bot")
    return {
        "$schema": SCHEMA,
        "manifestVersion": SCHEMA_VERSION,
        "version": version,
        "id": bot_id,
        "developer": {
            "name": "Threadwise",
            "websiteUrl": "https://github.com/threadwise/threadwise",
            "privacyUrl": "https://github.com/threadwise/threadwise#privacy",
            "termsOfUseUrl": "https://github.com/threadwise/threadwise#terms",
        },
        "name": {"short": "Threadwise", "full": "Threadwise: answers from your Confluence pages"},
        "description": {
            "short": "Answers questions from your Confluence pages, with sources.",
            "full": (
                "Mention Threadwise in a channel or group chat, or write to it in a personal chat: it answers "
                "in the thread from the Confluence spaces your admins chose, cites the pages it used, "
                "understands follow-ups, explains which sources caused an answer, and takes 👍/👎. In help-desk "
                "channels it answers questions without a mention, privately first if admins wish, and calls "
                "the channel's experts in when it cannot help."
            ),
        },
        "icons": {"color": "color.png", "outline": "outline.png"},
        "accentColor": "#{:02X}{:02X}{:02X}".format(*ACCENT),
        "bots": [
            {
                "botId": bot_id,
                "scopes": SCOPES,
                "supportsFiles": False,
                "isNotificationOnly": False,
                "commandLists": command_lists(),
            }
        ],
        "permissions": ["identity", "messageTeamMembers"],
        "validDomains": sorted(dict.fromkeys(d for d in domains if d)),
        "webApplicationInfo": {"id": bot_id, "resource": "https://RscBasedStoreApp"},
        "authorization": {
            "permissions": {"resourceSpecific": [{"name": n, "type": "Application"} for n in RSC_PERMISSIONS]}
        },
    }


def domain_of(url_or_host: str) -> str:
    """ "threadwise.example.com" from "https://threadwise.example.com/api/messages" or the bare host."""
    value = url_or_host.strip()
    return (urlsplit(value).hostname or "") if "//" in value else value.split("/")[0]


def package(*, bot_id: str, domains: Iterable[str] = ()) -> bytes:
    """The zip Teams takes: manifest.json, color.png, outline.png at its root."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(manifest(bot_id=bot_id, domains=domains), indent=2))
        zf.writestr("color.png", color_icon())
        zf.writestr("outline.png", outline_icon())
    return buffer.getvalue()


# -- icons ------------------------------------------------------------------------------------------------

Pixel = tuple[int, int, int, int]


def png(size: int, paint: Callable[[int, int], Pixel]) -> bytes:
    """A size×size RGBA PNG whose pixel (x, y) is `paint(x, y)`."""
    rows = b"".join(b"\x00" + b"".join(bytes(paint(x, y)) for x in range(size)) for y in range(size))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


def _bubble(x: float, y: float) -> bool:
    """A speech bubble in the unit square: a rounded box and a tail at its lower left."""
    in_box = 0.15 <= x <= 0.85 and 0.18 <= y <= 0.68
    corner = min(x - 0.15, 0.85 - x) < 0.08 and min(y - 0.18, 0.68 - y) < 0.08
    if in_box and corner:
        cx = 0.23 if x < 0.5 else 0.77
        cy = 0.26 if y < 0.43 else 0.60
        in_box = (x - cx) ** 2 + (y - cy) ** 2 <= 0.08**2
    tail = 0.25 <= x <= 0.42 and 0.68 <= y <= 0.85 and (y - 0.68) <= (0.42 - x)
    return in_box or tail


def _lines(x: float, y: float) -> bool:
    """Three text lines inside the bubble."""
    return any(abs(y - row) < 0.035 for row in (0.32, 0.43, 0.54)) and 0.27 <= x <= (
        0.73 if y < 0.5 else 0.58
    )


def color_icon() -> bytes:
    """192×192: a white speech bubble with text lines on the accent colour (full bleed, as Teams asks)."""

    def paint(x: int, y: int) -> Pixel:
        u, v = (x + 0.5) / 192, (y + 0.5) / 192
        if _bubble(u, v) and not _lines(u, v):
            return (255, 255, 255, 255)
        return (*ACCENT, 255)

    return png(192, paint)


def outline_icon() -> bytes:
    """32×32: the bubble in white on a transparent background."""

    def paint(x: int, y: int) -> Pixel:
        u, v = (x + 0.5) / 32, (y + 0.5) / 32
        return (255, 255, 255, 255) if _bubble(u, v) and not _lines(u, v) else (0, 0, 0, 0)

    return png(32, paint)
