"""Which pages a sync run looks at: the space's listing inside its scope, and of it the pages to fetch."""

from __future__ import annotations

from datetime import timedelta

from threadwise.connectors.confluence import ConfluenceClient, ConfluenceError, PageRef
from threadwise.connectors.scope import SpaceScope
from threadwise.index.store import PageState
from threadwise.sync.report import breadcrumb
from threadwise.sync.store import SyncState


def scoped_listing(client: ConfluenceClient, scope: SpaceScope) -> dict[str, PageRef]:
    """The space's current pages that its scope (parent page, excluded labels) includes, by id."""
    space = scope.space
    if client.get_space(space) is None:
        raise ConfluenceError(
            f"space {space} does not exist in Confluence, or the credentials cannot see it; "
            f"remove it with `threadwise spaces remove {space}` if it is gone"
        )
    pages = client.list_pages(space)
    if scope.parent_id is not None and scope.parent_id not in {ref.id for ref in pages}:
        raise ConfluenceError(
            f"the parent page {scope.parent_id} of space {space}'s scope is gone (deleted or moved); "
            f"nothing was removed: change the scope with `threadwise spaces add {space} --parent ID`"
        )
    labelled = client.pages_with_labels(space, scope.exclude_labels)
    return {ref.id: ref for ref in pages if scope.includes(ref, labelled=labelled)}


def pages_to_fetch(
    client: ConfluenceClient,
    scope: SpaceScope,
    listing: dict[str, PageRef],
    indexed: dict[str, PageState],
    breadcrumbs: dict[str, str],
    state: SyncState,
    *,
    full: bool,
    overlap: timedelta,
) -> list[PageRef]:
    """Step 3 of a run (see sync.py): which listed pages to fetch."""
    if full or state.cursor is None:
        return list(listing.values())
    wanted = {pid for pid in listing if pid not in indexed}
    modified = client.pages_modified_since(scope.space, state.cursor, overlap=overlap)
    wanted |= {
        r.id for r in modified if r.id in indexed and r.id in listing and r.version != indexed[r.id].version
    }
    for pid, ref in listing.items():  # renamed, or moved (its own or an ancestor's title changed)
        page = indexed.get(pid)
        if page is None or page.title != ref.title or breadcrumbs.get(pid) != breadcrumb(ref.ancestors):
            wanted.add(pid)
    wanted |= {pid for pid in state.retry_page_ids if pid in listing}
    return [ref for pid, ref in listing.items() if pid in wanted]
