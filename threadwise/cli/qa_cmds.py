"""`threadwise chat`, `ask`, `trace` and `index`: asking questions from a terminal or a script."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from threadwise.cli.errors import print_error
from threadwise.connectors.files import SAMPLE_WIKI_DIR
from threadwise.core.types import NOT_FOUND_PLAIN
from threadwise.wiring import Threadwise

if TYPE_CHECKING:
    from threadwise.chat.conversations import TurnView
    from threadwise.db.conversations import ThreadKey
    from threadwise.index.indexer import IndexReport

Build = Callable[[], Threadwise]

# what the asker alone is told when pages only they may read would have answered in a shared conversation
WITHHELD_HINT = "(Some pages only you may read would have helped with this answer: ask me in a direct message to use them.)"


def register(sub: Any, build: Build) -> None:
    p = sub.add_parser("chat", help="a conversation in the terminal (the sample wiki, or --docs DIR)")
    p.add_argument(
        "--docs",
        type=Path,
        help="a folder of page JSON files to chat with (default: the synced "
        "index, or the sample wiki when nothing is synced)",
    )
    p.set_defaults(func=lambda a: chat(a, build))

    p = sub.add_parser("ask", help="answer one question non-interactively")
    p.add_argument("question")
    p.add_argument("--thread", help="continue the conversation with this id")
    p.add_argument("--docs", type=Path, help="answer from this folder of pages instead of the synced index")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.add_argument(
        "--as",
        dest="as_email",
        metavar="EMAIL",
        help="ask as this person (their chat e-mail): under THREADWISE_PERMISSIONS=per-user the answer uses "
        "only what Confluence lets them read (default: an unknown person)",
    )
    p.add_argument(
        "--channel",
        action="store_true",
        help="ask as in a channel others can see, not in a direct message (per-user: only pages everyone "
        "there may read)",
    )
    p.set_defaults(func=lambda a: ask(a, build), exit_at_once=True)

    p = sub.add_parser("trace", help="print the trace of an answered turn")
    p.add_argument("turn_id", type=int)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: trace(a, build))

    p = sub.add_parser(
        "index", help="index a folder of page JSON files into the synced index (no Confluence)"
    )
    p.add_argument("--docs", type=Path, required=True)
    p.set_defaults(func=lambda a: index_folder(a, build), exit_at_once=True)


# ----- helpers -----
def index_folder_into(
    app: Threadwise, folder: Path, *, remove_missing: bool, record: bool = False
) -> tuple[IndexReport, int]:
    """Index a folder of page files into `app`'s index with a progress bar, reporting skipped pages on
    stderr; returns the report and the number of pages skipped in all (unreadable files included).
    With `record`, the run and its skipped files go into the run history, where `status` shows them (a run
    killed midway stays "running" there, and status calls it interrupted)."""
    from filelock import FileLock, Timeout

    from threadwise.cli.progress import ProgressBar
    from threadwise.connectors.files import load_pages
    from threadwise.index.indexer import PageLimits, index_pages
    from threadwise.sync.store import FOLDER_TRIGGER, RunCounts, SyncStore

    pages, failures = load_pages(folder)
    app.settings.data_dir.mkdir(parents=True, exist_ok=True)
    # One indexing run per collection at a time: a second one waits, then finds the pages current and embeds
    # nothing (without the lock both would embed everything).
    lock = FileLock(str(app.settings.data_dir / f"index-{app.collection}.lock"))
    wait_s = float(app.settings.get("THREADWISE_INDEX_LOCK_WAIT_SECONDS", "900"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(
            "Another `threadwise index` is indexing into this data folder; waiting for it…", file=sys.stderr
        )
        try:
            lock.acquire(timeout=wait_s)
        except Timeout:
            raise ValueError(f"busy: another indexing run held {lock.lock_file} for {wait_s:.0f} s") from None
    runs = SyncStore(sessions=app.sessions) if record else None
    run_id = runs.start_run(str(folder.resolve())[:255], full=True, trigger=FOLDER_TRIGGER)[0] if runs else 0
    try:
        app.embedder.warm_up()
        report = index_pages(
            app.index,
            pages,
            remove_missing=remove_missing,
            progress=ProgressBar(f"Indexing {folder.name}"),
            limits=PageLimits.from_env(app.settings.env),
        )
    except BaseException as error:  # recorded, then on its way (Ctrl-C, a broken index)
        if runs:
            runs.finish_run(run_id, status="failed", counts=RunCounts(len(pages)), error=repr(error))
        raise
    finally:
        lock.release()
    if runs:
        skipped = [*failures, *report.failures]
        counts = RunCounts(
            pages=len(pages) + len(failures),
            updated=report.embedded,  # a folder run does not tell new pages from changed ones
            deleted=report.removed,
            unchanged=report.unchanged,
            failed=len(skipped),
        )
        runs.finish_run(run_id, status="partial" if skipped else "ok", counts=counts, failures=skipped)
    for c in report.capped:
        print(f"  capped {c.title or c.page_id}: {c.reason}", file=sys.stderr)
    for f in [*failures, *report.failures]:
        print(f"  skipped {f.title or f.page_id}: {f.reason}", file=sys.stderr)
    return report, len(failures) + len(report.failures)


def use_docs(app: Threadwise, docs: Path | None) -> Threadwise:
    """Point `app` at a local folder of pages (its own collection), indexing what changed; or at the synced
    index, falling back to the sample wiki when nothing is synced yet."""
    if docs is None and app.index.count() > 0:
        return app
    folder = docs or SAMPLE_WIKI_DIR
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of pages")
    name = (
        "sample" if docs is None else "docs-" + uuid.uuid5(uuid.NAMESPACE_URL, str(folder.resolve())).hex[:12]
    )
    # a folder's pages carry no Confluence permissions: whoever can read the folder reads them here, as under `off`
    local = Threadwise(settings=replace(app.settings, permissions="off"), collection=name)
    report, _skipped = index_folder_into(local, folder, remove_missing=True)
    if docs is None:
        print(
            f"Nothing synced from Confluence yet: using the sample wiki ({report.pages} pages).",
            file=sys.stderr,
        )
    return local


CHAT_HINT = "/explain, /trace, /new, /quit"


def render_turn(view: TurnView, *, hint: str) -> str:
    """The answer (citations as "[1]", like the source list), then its sources grouped by page (cited pages
    first, then the other pages retrieved), then `hint`: what to do next in this command."""
    from threadwise.chat.conversations import page_groups
    from threadwise.chat.turn_views import page_lines
    from threadwise.core.answer.citations import rewrite_citations

    groups = page_groups(view.sources)
    cited_pages = {s.page_id for s in view.cited_sources}
    if view.not_found:
        lines = [NOT_FOUND_PLAIN]
        if groups:
            lines.append("Closest pages: " + "; ".join(f"{_numbers(n)} {s.title}" for n, s in groups[:3]))
        lines += [view.unmapped_note] if view.unmapped_note else []
        lines.append("")
    else:
        known = {s.number for s in view.sources}
        answer = rewrite_citations(
            view.answer, lambda n: f"[{n}]" if n in known else None, n_sources=max(known, default=0)
        )
        lines = [answer, ""]
    if view.completed_question and view.completed_question.split() != view.question.split():  # changed it
        lines.insert(0, f"(understood as: {view.completed_question})\n")
    if view.cited_sources and not view.not_found:
        lines.append("Sources:")
        for page, (_, s) in zip(page_lines(view.cited_sources), page_groups(view.cited_sources), strict=True):
            updated = [f"updated {page.date}"] if page.date else []
            updated += ["possibly outdated"] if page.possibly_outdated else []
            parts = [f"{_numbers(list(page.numbers))} {page.title}", page.space, *updated, page.url]
            lines.append("  " + " — ".join(p for p in parts if p))
            snippet = " ".join(s.text.split())
            lines.append(f"      “{snippet[:200]}{'…' if len(snippet) > 200 else ''}”")
    if view.confidence_line:
        lines.append(view.confidence_line)
    others = [(n, s) for n, s in groups if s.page_id not in cited_pages]
    if others and not view.not_found:
        lines.append(
            "Also retrieved: " + "; ".join(f"{_numbers(n)} {s.title or s.label}" for n, s in others[:5])
        )
    lines.append(f"(turn {view.turn_id}; {hint})")
    return "\n".join(lines)


def _numbers(numbers: list[int]) -> str:
    return "[" + ", ".join(map(str, numbers)) + "]"


# ----- commands -----
def chat(args: argparse.Namespace, build: Build) -> int:
    from threadwise.db.conversations import ThreadKey

    app = use_docs(build(), args.docs)
    service = app.conversations
    user = getpass.getuser()

    def new_key() -> ThreadKey:
        return ThreadKey("cli", "local", user, uuid.uuid4().hex[:12])

    key = new_key()
    last: TurnView | None = None
    interactive = sys.stdin.isatty()
    print("Ask a question about the wiki. Commands: /explain /trace /new /quit", file=sys.stderr)
    while True:
        try:
            line = input("you> " if interactive else "")
        except EOFError:
            break
        line = line.strip()
        if not line:
            continue
        if not interactive:
            print(f"you> {line}")
        if line in ("/quit", "/exit"):
            break
        if line == "/new":
            key, last = new_key(), None
            print("— new conversation —")
        elif line == "/explain":
            if last is None:
                print("Ask something first.")
            else:
                print("Explaining (regenerating the answer without each group of sources)…", file=sys.stderr)
                print(service.explain(last.turn_id).text)
        elif line == "/trace":
            print(service.trace_text(last.turn_id) if last else "Ask something first.")
        elif line.startswith("/"):
            print("Commands: /explain /trace /new /quit")
        else:
            last = service.ask(key, line, user=user)
            print("threadwise> " + render_turn(last, hint=CHAT_HINT))
        print()
    return 0


def ask(args: argparse.Namespace, build: Build) -> int:
    from threadwise.db.conversations import ThreadKey

    app = use_docs(build(), args.docs)  # like chat: the sample wiki when nothing is synced yet
    thread = args.thread or uuid.uuid4().hex[:12]
    from threadwise.permissions import Asker

    asker = Asker(email=args.as_email, private=not args.channel)
    view = app.conversations.ask(
        ThreadKey("cli", "local", "ask", thread),
        args.question,
        user=args.as_email or getpass.getuser(),
        asker=asker,
    )
    if args.json:
        source = ("page_id", "title", "url", "space", "kind", "label", "number")
        print(
            json.dumps(
                {
                    "turn_id": view.turn_id,
                    "thread": thread,
                    "question": view.question,
                    "completed_question": view.completed_question,
                    "answer": view.answer,
                    "not_found": view.not_found,
                    "error": view.error,
                    "cited_sources": [{k: getattr(s, k) for k in source} for s in view.cited_sources],
                    "sources": [{k: getattr(s, k) for k in source} for s in view.sources],
                    "follow_ups": view.follow_ups,
                    "timings_ms": view.timings_ms,
                    "withheld": view.withheld,
                    "unmapped_note": view.unmapped_note,
                    "confidence": view.confidence,
                },
                ensure_ascii=False,
                indent=2,
            )
        )
    else:
        hint = f"details: threadwise trace {view.turn_id}; a follow-up: threadwise ask … --thread {thread}"
        print(render_turn(view, hint=hint))
        if view.withheld:
            print(WITHHELD_HINT)
    return print_error(view.error, 1) if view.error else 0


def trace(args: argparse.Namespace, build: Build) -> int:
    service = build().conversations
    try:
        data = service.trace(args.turn_id)
    except KeyError:
        return print_error(f"there is no turn {args.turn_id}: each answer ends with its turn id", 1)
    print(json.dumps(data, ensure_ascii=False, indent=2) if args.json else service.trace_text(args.turn_id))
    return 0


def index_folder(args: argparse.Namespace, build: Build) -> int:
    report, skipped = index_folder_into(build(), args.docs, remove_missing=False, record=True)
    v = report.vectors
    print(
        f"{report.pages} pages: {report.embedded} embedded, {report.unchanged} unchanged, "
        f"{skipped} skipped; {v.embedded} texts embedded, {v.cached + v.shared} reused; {report.seconds:.1f} s"
    )
    if skipped:  # a script must see that some pages are not in the index
        return print_error(f"{skipped} pages or files could not be indexed (listed above)", 1)
    return 0
