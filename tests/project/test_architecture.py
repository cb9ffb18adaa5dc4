"""The house rules, checked: no import cycles anywhere in the package, and few root modules.

`make test` also runs `lint-imports` (the layer contracts in pyproject.toml). grimp reads every
import statement, including those inside functions and those under ``if TYPE_CHECKING:``, so
a cycle cannot hide in a late import or in an annotation: a module the session imports (its
services) names the session by a protocol (``agent/host.py``), never by importing it. The
layer rule counts them too (lint-imports, and the check below): a module below the agent
never names its classes, not even for the type checker (docs/architecture.md).
"""

from __future__ import annotations

from pathlib import Path

import grimp

import jupyter_memory

PACKAGE = Path(jupyter_memory.__file__).parent


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in graph.modules:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("jupyter_memory")  # type-checking imports included
    cycles = _cycles(graph)
    assert cycles == [], (
        "import cycles (imports inside functions and type-only imports count):\n"
        + "\n".join(" <-> ".join(c) for c in cycles))


def test_the_cycle_check_sees_type_only_imports() -> None:
    """The check above is only as good as its graph: an import under ``TYPE_CHECKING`` (the
    session's services name the session's protocol that way) is an edge of it."""
    edge = ("jupyter_memory.agent.extraction", "jupyter_memory.agent.host")  # type-only
    without = grimp.build_graph("jupyter_memory", exclude_type_checking_imports=True)
    assert edge[1] not in without.find_modules_directly_imported_by(edge[0])
    graph = grimp.build_graph("jupyter_memory")
    assert edge[1] in graph.find_modules_directly_imported_by(edge[0])


BELOW_THE_AGENT = ("memdir", "transcript", "context", "recall")
AGENT_AND_ABOVE = ("agent", "sessions", "widgets", "magics", "cli", "server", "demo")


def test_layers_below_the_agent_do_not_name_it_even_for_types() -> None:
    graph = grimp.build_graph("jupyter_memory")  # type-checking imports included
    wrong = []
    for layer in BELOW_THE_AGENT:
        package = f"jupyter_memory.{layer}"
        for importer in sorted({package} | graph.find_descendants(package)):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                parts = imported.split(".")
                if parts[0] == "jupyter_memory" and len(parts) > 1 and parts[1] in AGENT_AND_ABOVE:
                    wrong.append(f"{importer} -> {imported}")
    assert wrong == [], "a layer below the agent imports a higher one:\n" + "\n".join(wrong)


def test_few_modules_at_the_package_root() -> None:
    root_modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root_modules) <= 8, root_modules
