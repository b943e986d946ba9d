"""The functional core: pages -> evidence -> index -> retrieval -> answer -> attribution.

Nothing in here imports Slack or Atlassian code; adapters to outside services sit in their own modules
behind the small Protocols of `threadwise.core.protocols`.
"""
