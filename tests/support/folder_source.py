"""A folder of page files as a `PageSource`: the shape another source plugs in by (the Confluence sync's
list, then fetch), shown on the simplest one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from threadwise.connectors.files import load_pages
from threadwise.core.types import Page, PageFailure, PageRef


class FolderSource:
    """A folder of page files as a `PageSource`, read once; `space` "" lists every page of the folder.

    Files that could not be read are in `failures` (a listing has no place for them).
    """

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)
        self._pages: dict[str, Page] | None = None
        self.failures: list[PageFailure] = []

    def _all(self) -> dict[str, Page]:
        if self._pages is None:
            pages, self.failures = load_pages(self.folder)
            self._pages = {p.id: p for p in pages}
        return self._pages

    def list_pages(self, space: str) -> list[PageRef]:
        return [
            PageRef(id=p.id, title=p.title, version=p.version, ancestors=p.ancestors)
            for p in self._all().values()
            if not space or p.space == space
        ]

    def get_page(
        self, page_id: str, *, space: str = "", ancestors: Sequence[str] | None = None
    ) -> Page | PageFailure:
        page = self._all().get(page_id)
        if page is None or (space and page.space != space):
            return PageFailure(page_id=page_id, title="", reason=f"no such page in {self.folder}")
        return page


def index_folder(data_dir: Path, folder: Path) -> None:
    """`folder`'s page files indexed into the data folder `data_dir` with the hashing embedder, in this process:
    what `threadwise index --docs` leaves for a `serve` started after it, without a process start."""
    from threadwise.index.indexer import index_pages
    from threadwise.settings import load_settings
    from threadwise.wiring import Threadwise

    app = Threadwise(settings=load_settings(env={"THREADWISE_EMBEDDER": "hashing"}, data_dir=data_dir))
    pages, failures = load_pages(folder)
    assert not failures and not index_pages(app.index, pages).failures
