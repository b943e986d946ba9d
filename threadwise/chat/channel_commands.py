"""The admin commands for a channel's modes: `auto on|off`, `private on|off`, `experts <mentions> | none`.

Without arguments each says how the channel is set (everyone may ask); changing needs an admin. Experts are
the mentions the front end found in the command (Slack: `<@U…>` and `<!subteam^S…>`; Teams: its mention
entities), never names typed as text.
"""

from __future__ import annotations

from collections.abc import Sequence

from threadwise.chat.identity import Admins
from threadwise.chat.markup import Markup, escape
from threadwise.db.channel_modes import ChannelMode, ChannelModes, Expert

NAMES = ("auto", "private", "experts")
SWITCHES = ("on", "off")


def expert_mention(expert: Expert, markup: Markup) -> str:
    return (
        markup.group(expert.id, expert.name)
        if expert.kind == "group"
        else markup.user(expert.id, expert.name)
    )


def mode_line(mode: ChannelMode, markup: Markup) -> str:
    """ "In this channel: I answer questions without a mention · answers go to the asker first · experts: @a"."""
    said = [
        "I answer questions without a mention" if mode.auto else "I answer when mentioned",
        "answers go to the asker first, with Share" if mode.private else "answers are posted in the thread",
    ]
    if mode.experts:
        said.append("“Still need help?” calls " + ", ".join(expert_mention(e, markup) for e in mode.experts))
    else:
        said.append("no experts to call in")
    return "In this channel: " + " · ".join(said) + "."


def channel_command(
    name: str,
    args: Sequence[str],
    *,
    modes: ChannelModes,
    channel: str,
    user: str,
    is_admin: Admins,
    markup: Markup,
    platform: str,
    mentions: Sequence[Expert] = (),
) -> str:
    """Carry out `auto`, `private` or `experts` in `channel`; the reply."""
    mode = modes.get(channel)
    if not args:
        return mode_line(mode, markup)
    if not channel:
        return "This works in a channel: run it there."
    if not is_admin(user):
        return (
            f"Sorry, only Threadwise admins can change how I work in a channel. Please ask {is_admin.who()}."
        )
    if name == "experts":
        return _experts(
            args, mentions, modes=modes, channel=channel, user=user, markup=markup, platform=platform
        )
    switch = args[0].lower()
    if len(args) != 1 or switch not in SWITCHES:
        return f"For example `{markup.command} {name} on` (or `off`); without arguments: how it is set here."
    on = switch == "on"
    if name == "auto":
        mode = modes.set_auto(channel, on, platform=platform, by=user)
        done = (
            "Done: I now answer questions in this channel without a mention, in a thread under them. "
            "Statements and chit-chat get nothing, and so do questions the wiki does not answer."
            if on
            else "Done: in this channel I answer only when mentioned again."
        )
    else:
        mode = modes.set_private(channel, on, platform=platform, by=user)
        done = (
            "Done: my answers here go to the asker alone first, with Share to channel and Keep to myself."
            if on
            else "Done: my answers here are posted in the thread again."
        )
    return f"{done}\n{mode_line(mode, markup)}"


def _experts(
    args: Sequence[str],
    mentions: Sequence[Expert],
    *,
    modes: ChannelModes,
    channel: str,
    user: str,
    markup: Markup,
    platform: str,
) -> str:
    if [a.lower() for a in args] in (["none"], ["off"]):
        mode = modes.set_experts(channel, [], platform=platform, by=user)
        return f"Done: nobody is called in from this channel.\n{mode_line(mode, markup)}"
    if not mentions:
        return (
            f"Mention the people or user groups to call in, for example `{markup.command} experts @alice "
            f"@help-desk`; `{markup.command} experts none` calls nobody. I did not find a mention in "
            f"“{escape(' '.join(args))}”."
        )
    mode = modes.set_experts(channel, list(mentions), platform=platform, by=user)
    return f"Done.\n{mode_line(mode, markup)}"
