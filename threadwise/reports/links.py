"""Links to where a question was asked, for admins: a Slack thread, a Teams message or chat."""

from __future__ import annotations

from urllib.parse import quote

from threadwise.reports.rows import ThreadRef


def thread_link(thread: ThreadRef) -> str:
    """The thread's address in its chat app; "" for the terminal and unknown platforms."""
    if thread.platform == "slack" and thread.workspace and thread.channel:
        if thread.thread:
            return (
                f"https://app.slack.com/client/{thread.workspace}/{thread.channel}"
                f"/thread/{thread.channel}-{thread.thread}"
            )
        return f"https://app.slack.com/client/{thread.workspace}/{thread.channel}"
    if thread.platform == "teams" and thread.channel:
        tenant = f"?tenantId={quote(thread.workspace, safe='')}" if thread.workspace else ""
        conversation = quote(thread.channel, safe="")
        if thread.thread:  # a channel's reply chain: its root message
            return f"https://teams.microsoft.com/l/message/{conversation}/{quote(thread.thread, safe='')}{tenant}"
        return f"https://teams.microsoft.com/l/chat/{conversation}/conversations{tenant}"
    return ""
