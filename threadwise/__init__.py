"""Threadwise: answers in Slack threads from a team's Confluence pages, with citations and explanations."""

__version__ = "0.1.0"
