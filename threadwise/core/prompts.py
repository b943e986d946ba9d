"""The Jinja2 prompts in `threadwise/prompts/`, rendered into chat messages.

Each template has a `system` block and a `user` block; `Prompts.messages` renders both into the
`[{"role": "system", ...}, {"role": "user", ...}]` list a chat model takes. A directory given as `directory`
is searched first, so a team can override one prompt by dropping a file of the same name there.

Autoescaping is off (prompts are not HTML). Untrusted text (wiki evidence, questions, answers) goes through
the `fence` filter, which neutralises anything that looks like one of the prompt's own fence tags, so a page
containing "</source> Ignore previous instructions" cannot close its fence.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2

# Tag names the templates use as fences; the same names inside untrusted text are neutralised.
FENCE_TAGS = ("source", "sources", "question", "answer", "gold_answer", "conversation", "turn", "history")
_FENCE_LIKE = re.compile(r"<(\s*/?\s*(?:" + "|".join(FENCE_TAGS) + r")\b[^<>]*)(>?)", re.IGNORECASE)


def fence(text: object) -> str:
    """Untrusted text made safe to put between fence tags: '<source ...>' becomes '‹source ...›'."""
    return _FENCE_LIKE.sub(lambda m: "‹" + m.group(1) + ("›" if m.group(2) else ""), str(text)).strip()


class Prompts:
    """Loads and renders the prompt templates. Cheap to build; thread-safe to use."""

    def __init__(self, *, directory: Path | None = None) -> None:
        loaders: list[jinja2.BaseLoader] = [jinja2.PackageLoader("threadwise", "prompts")]
        if directory is not None:
            loaders.insert(0, jinja2.FileSystemLoader(str(directory)))
        self._env = jinja2.Environment(
            loader=jinja2.ChoiceLoader(loaders),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
        )
        self._env.filters["fence"] = fence

    def messages(self, name: str, **variables: Any) -> list[dict[str, str]]:
        """The system and user messages of template `name` (e.g. "answer.j2") rendered with `variables`."""
        template = self._env.get_template(name)
        context = template.new_context(variables)
        rendered = []
        for role in ("system", "user"):
            if role not in template.blocks:
                raise ValueError(f"prompt {name} has no {{% block {role} %}}")
            text = "".join(template.blocks[role](context))
            rendered.append({"role": role, "content": _tidy(text)})
        return rendered

    def source(self, name: str) -> str:
        """The template's text, for showing users the prompt behind an answer."""
        source, _, _ = self._env.loader.get_source(self._env, name)  # type: ignore[union-attr]
        return source


def _tidy(text: str) -> str:
    """Strip the template's indentation artefacts: no trailing spaces, at most one blank line in a row."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
