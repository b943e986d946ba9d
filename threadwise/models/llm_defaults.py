"""Defaults of the OpenAI-compatible client, shared by its settings (llm_settings.py, imported by every
command) and the client (openai_chat.py, which imports the openai package: only commands that talk to an LLM)."""

DEFAULT_TIMEOUT = 60.0  # seconds per attempt
DEFAULT_MAX_RETRIES = 3
