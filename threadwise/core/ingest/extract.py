"""Pages -> contextualized evidence: the indexing pipeline's first step, one page or many.

`extract_evidence` fails loudly for one page (`PageParseError`); `extract_many` turns those failures into
values, so one malformed page is skipped and reported instead of stopping a sync or an eval run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypedDict, Unpack

from threadwise.core.ingest.contextualize import ALL, DEFAULT_NEIGHBOUR_CHARS, ContextParts, contextualize
from threadwise.core.ingest.linearize import check_linearizer
from threadwise.core.ingest.storage_format import DEFAULT_MAX_CHARS, parse_storage_format
from threadwise.core.types import Evidence, Page, PageFailure


class PageParseError(ValueError):
    """A page that yields no usable evidence (empty body, nothing left after parsing, unparseable)."""


def extract_evidence(
    page: Page,
    *,
    parts: ContextParts = ALL,
    linearizer: str = "verbalized",
    index_tables: bool = True,
    index_rows: bool = True,
    max_chars: int = DEFAULT_MAX_CHARS,
    neighbour_chars: int = DEFAULT_NEIGHBOUR_CHARS,
    user_names: Mapping[str, str] | None = None,
) -> list[Evidence]:
    """Parse one page and contextualize its elements; raise PageParseError when nothing usable comes out.

    `index_tables` / `index_rows` leave out whole tables / single rows (ablations). Context (before/after)
    is still taken from all elements, and positions stay those of the full page, so evidence ids do not
    depend on these switches.
    """
    check_linearizer(linearizer)  # a wrong setting is the caller's error, not the page's
    if not isinstance(page.body, str) or not page.body.strip():
        raise PageParseError("the page body is empty")
    try:
        elements = parse_storage_format(
            page.body, linearizer=linearizer, max_chars=max_chars, user_names=user_names
        )
    except RecursionError as error:
        raise PageParseError("the page body is nested too deeply to parse") from error
    except Exception as error:  # noqa: BLE001 - a parser bug on one odd page must not stop the others
        raise PageParseError(
            f"the page body could not be parsed ({type(error).__name__}: {error})"
        ) from error
    if not elements:
        raise PageParseError("no text left after parsing (the body holds only macros without text or markup)")
    evidence = contextualize(page, elements, parts=parts, neighbour_chars=neighbour_chars)
    return [e for e in evidence if (index_tables or e.kind != "table") and (index_rows or e.kind != "row")]


class ExtractOptions(TypedDict, total=False):
    """The keyword options of `extract_evidence`, for passing them on unchanged."""

    parts: ContextParts
    linearizer: str
    index_tables: bool
    index_rows: bool
    max_chars: int
    neighbour_chars: int
    user_names: Mapping[str, str] | None


def extract_many(
    pages: Iterable[Page], **options: Unpack[ExtractOptions]
) -> tuple[list[Evidence], list[PageFailure]]:
    """Extract evidence from many pages (options as for `extract_evidence`); a page that fails is skipped
    and reported with its reason."""
    check_linearizer(options.get("linearizer", "verbalized"))
    evidence: list[Evidence] = []
    failures: list[PageFailure] = []
    for page in pages:
        try:
            evidence += extract_evidence(page, **options)
        except PageParseError as error:
            failures.append(PageFailure(page_id=page.id, title=page.title, reason=str(error)))
    return evidence, failures
