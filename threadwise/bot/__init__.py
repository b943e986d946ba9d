"""Front ends that people talk to. Slack is the first adapter over the platform-neutral ConversationService
(threadwise.conversations); nothing outside this package imports it.
"""
