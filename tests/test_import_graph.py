"""Imports run one way (corpus <- chatbot <- ui, evaluation), with no cycle inside the product.

Every import counts, module-level and inside functions (``ast`` walk). The command-line entry
(``chatbot/cli.py``) is the one place allowed to dispatch upwards to the pages and the benchmarks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"corpus": 0, "chatbot": 1, "ui": 2, "evaluation": 2}
ENTRY = "chatbot.cli"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Absolute module names imported anywhere in the file (relative imports resolved)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.add(module)
            out.update(f"{module}.{a.name}" for a in node.names)  # "from chatbot import llm" names a module
    return out


def product_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (corpus, chatbot, ui, evaluation)."""
    files = [p for top in LAYERS for p in (ROOT / top).rglob("*.py")]
    modules = {module_name(p): p for p in files}

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    graph = {}
    for name, path in modules.items():
        graph[name] = {t for t in (resolve(i) for i in imports_of(path)) if t and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycle_detection_on_a_hand_made_graph():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_are_read_from_the_whole_file():
    pkg = ROOT / "chatbot" / "stages"
    names = imports_of(pkg / "route.py")
    assert "chatbot.logical.detect" in names


def test_the_product_has_no_import_cycle():
    product = {k: {t for t in v if t.split(".")[0] in ("chatbot", "corpus")} for k, v in product_graph().items()}
    assert cycles(product) == []


def test_imports_only_run_downwards_except_from_the_command_line_entry():
    upward = [
        f"{source} -> {target}"
        for source, targets in product_graph().items()
        for target in sorted(targets)
        if source != ENTRY and LAYERS[target.split(".")[0]] > LAYERS[source.split(".")[0]]
    ]
    assert upward == []


@pytest.mark.parametrize("serving", ["chatbot.stages.rerank", "chatbot.answer", "chatbot.pipeline"])
def test_serving_code_never_imports_training_code(serving):
    graph = product_graph()
    seen, todo = set(), [serving]
    while todo:  # everything the module pulls in, transitively
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(graph.get(module, ()))
    assert sorted(m for m in seen if m.startswith("chatbot.training")) == []
