"""Which LLM answers which role, read from environment variables by the composition root.

Roles: "completion" (rewriting follow-ups), "answer", "counterfactual" (Explain), "judge" (eval --answers).

Variables (all optional; per-role ones override the shared THREADWISE_LLM_* ones):

    THREADWISE_LLM                  "off" forces the embedded (no-LLM) default even when keys are set
    THREADWISE_LLM_BASE_URL         OpenAI-compatible base URL, e.g. http://localhost:11434/v1 (Ollama)
                                    falls back to OPENAI_BASE_URL, then AZURE_OPENAI_ENDPOINT, then OpenAI's
    THREADWISE_LLM_API_KEY          falls back to OPENAI_API_KEY (AZURE_OPENAI_API_KEY on Azure); a local
                                    server with a base URL and no key gets a placeholder key
    THREADWISE_LLM_MODEL            default gpt-4o-mini (on Azure: the deployment name)
    THREADWISE_LLM_TIMEOUT          seconds per attempt, default 60
    THREADWISE_LLM_MAX_RETRIES      retries on 429/5xx/timeouts, default 3
    THREADWISE_LLM_AZURE_API_VERSION  turns on Azure OpenAI (falls back to OPENAI_API_VERSION; set
                                    automatically to 2024-10-21 when only AZURE_OPENAI_ENDPOINT is given)

    THREADWISE_<ROLE>_BASE_URL, _API_KEY, _MODEL, _TIMEOUT, _MAX_RETRIES   with ROLE one of
    COMPLETION, ANSWER, COUNTERFACTUAL, JUDGE. The counterfactual role falls back to the ANSWER settings
    first: Explain compares counterfactual answers with the original one, so by default the same model
    writes both.

An LLM counts as configured when one of OPENAI_API_KEY, OPENAI_BASE_URL, THREADWISE_LLM_BASE_URL,
THREADWISE_LLM_API_KEY or AZURE_OPENAI_ENDPOINT is set (and THREADWISE_LLM is not "off").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from threadwise.models.llm_defaults import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT

if TYPE_CHECKING:  # openai takes ~0.6 s to import: only a command that talks to the LLM pays for it
    from threadwise.models.openai_chat import OpenAIChat


ROLES = ("completion", "answer", "counterfactual", "judge")
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_AZURE_API_VERSION = "2024-10-21"
LOCAL_PLACEHOLDER_KEY = "no-key"  # vLLM, Ollama and llama.cpp accept any key, the client insists on one

_SWITCHES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "THREADWISE_LLM_BASE_URL",
    "THREADWISE_LLM_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
)


@dataclass(frozen=True)
class LLMSettings:
    """How to reach the chat model of one role."""

    model: str = DEFAULT_MODEL
    base_url: str | None = None  # None: the client's default (OPENAI_BASE_URL or api.openai.com)
    api_key: str | None = field(default=None, repr=False)  # None: the client's OPENAI_API_KEY
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    azure_api_version: str | None = None  # set: Azure OpenAI, `model` is the deployment name


def llm_settings_from_env(env: Mapping[str, str]) -> dict[str, LLMSettings] | None:
    """Settings per role (see the module docstring for the variables), or None when no LLM is configured."""
    if env.get("THREADWISE_LLM", "").strip().lower() in ("off", "none", "0", "false", "no"):
        return None
    if not any(env.get(name, "").strip() for name in _SWITCHES):
        return None
    return {role: _role_settings(env, role) for role in ROLES}


def make_chat(settings: LLMSettings) -> OpenAIChat:
    """The chat model for one role's settings."""
    from threadwise.models.openai_chat import OpenAIChat

    return OpenAIChat(
        model=settings.model,
        base_url=settings.base_url,
        api_key=settings.api_key,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        azure_api_version=settings.azure_api_version,
    )


def _role_settings(env: Mapping[str, str], role: str) -> LLMSettings:
    prefixes = [f"THREADWISE_{role.upper()}_"]
    if role == "counterfactual":
        prefixes.append("THREADWISE_ANSWER_")
    prefixes.append("THREADWISE_LLM_")

    def first(suffix: str, *fallbacks: str) -> tuple[str, str] | None:
        """(variable name, value) of the first non-empty variable."""
        for name in [prefix + suffix for prefix in prefixes] + list(fallbacks):
            value = env.get(name, "").strip()
            if value:
                return name, value
        return None

    azure_version = first("AZURE_API_VERSION", "OPENAI_API_VERSION")
    base_url = first("BASE_URL", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT")
    on_azure = azure_version is not None or (base_url is not None and base_url[0] == "AZURE_OPENAI_ENDPOINT")
    api_key = first(
        "API_KEY", *(("AZURE_OPENAI_API_KEY", "OPENAI_API_KEY") if on_azure else ("OPENAI_API_KEY",))
    )
    model = first("MODEL")
    timeout = first("TIMEOUT")
    retries = first("MAX_RETRIES")
    return LLMSettings(
        model=model[1] if model else DEFAULT_MODEL,
        base_url=base_url[1] if base_url else None,
        api_key=api_key[1] if api_key else (LOCAL_PLACEHOLDER_KEY if base_url else None),
        timeout=_number(timeout, float, minimum=0.001) if timeout else DEFAULT_TIMEOUT,
        max_retries=int(_number(retries, int, minimum=0)) if retries else DEFAULT_MAX_RETRIES,
        azure_api_version=(azure_version[1] if azure_version else DEFAULT_AZURE_API_VERSION)
        if on_azure
        else None,
    )


def _number(variable: tuple[str, str], kind: type[int] | type[float], *, minimum: float) -> float:
    name, text = variable
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a valid {kind.__name__}") from None
    if value < minimum:
        raise ValueError(f"{name}={text!r} must be at least {minimum:g}")
    return value
