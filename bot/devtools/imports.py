"""The imports between lorelab's packages: `python -m bot.devtools.imports [--json]`.

Reads every module's source (nothing is imported or run) and lists, for each pair of top-level
packages, the modules that import across, with line numbers, including imports inside
functions. It then checks the dependency rule of docs/ARCHITECTURE.md: `workers` may import
`bot`, `bot` imports `workers` nowhere but in the allowed modules below, and no module import
circle exists (imports under `if TYPE_CHECKING:` are never run, and not counted). Exit status
1 when the rule is broken.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

PACKAGES = ("bot", "workers", "migrations")
# `lorelab bench` runs a lab campaign in this process, on this machine: it is the data plane's
# own command line, and so the one place the control plane's CLI may import the workers.
ALLOWED = {("bot", "workers"): ("bot.cli.lab",)}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    line: int
    target: str  # the imported module


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(root: Path, path: Path) -> Iterator[Import]:
    """Every import statement in the module at `path`, anywhere in it."""
    name = module_name(root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    # Imports only a type checker reads (`if TYPE_CHECKING:`) are never run: not a dependency.
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(block.test)
                   for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                # `from bot.runs import steps` imports a module; `from x import name` a name.
                yield Import(name, node.lineno, f"{base}.{alias.name}" if base else alias.name)


def all_imports(root: Path) -> list[Import]:
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            found.extend(i for i in imports_of(root, path) if i.target.split(".")[0] in PACKAGES)
    return found


def resolve(target: str, modules: set[str]) -> str | None:
    """The module `target` names: itself, or the module holding the name it imports."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def crossings(found: list[Import]) -> dict[tuple[str, str], list[Import]]:
    """Imports from one top-level package into another, by (from, to)."""
    out: dict[tuple[str, str], list[Import]] = {}
    for i in found:
        pair = (i.module.split(".")[0], i.target.split(".")[0])
        if pair[0] != pair[1]:
            out.setdefault(pair, []).append(i)
    return out


def circles(found: list[Import], modules: set[str]) -> list[list[str]]:
    """Module import cycles (each as a path that returns to its start); none is allowed."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for i in found:
        target = resolve(i.target, modules)
        if target and target != i.module and not i.module.startswith(target + "."):
            graph[i.module].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def violations(found: list[Import], modules: set[str]) -> list[str]:
    """Each way the tree breaks the dependency rule, in words."""
    problems = []
    for i in crossings(found).get(("bot", "workers"), []):
        if i.module not in ALLOWED[("bot", "workers")]:
            problems.append(f"{i.module}:{i.line} imports {i.target}: bot/ must not import "
                            "workers/ (send a task by name: bot.runs.taskqueue)")
    for cycle in circles(found, modules):
        problems.append("import circle: " + " <-> ".join(cycle))
    return problems


def report(root: Path) -> dict[str, object]:
    """The crossings, circles and violations of the tree at `root`, as JSON-ready data."""
    found = all_imports(root)
    modules = {module_name(root, p) for package in PACKAGES
               for p in (root / package).rglob("*.py")}
    return {
        "crossings": {f"{a} -> {b}": [asdict(i) for i in imports]
                      for (a, b), imports in sorted(crossings(found).items())},
        "circles": circles(found, modules),
        "violations": violations(found, modules),
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(__file__).resolve().parents[2]
    data = report(root)
    if "--json" in args:
        print(json.dumps(data, indent=2))
    else:
        for pair, imports in data["crossings"].items():  # type: ignore[attr-defined]
            modules = sorted({i["module"] for i in imports})
            print(f"{pair}: {len(imports)} imports from {len(modules)} modules")
            if pair.startswith("bot ->"):
                for i in imports:
                    print(f"  {i['module']}:{i['line']} -> {i['target']}")
        for problem in data["violations"]:  # type: ignore[attr-defined]
            print(f"error: {problem}")
        if not data["violations"]:
            print("dependency rule kept: bot -> workers only in "
                  + ", ".join(ALLOWED[("bot", "workers")]) + "; no import circles")
    return 1 if data["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
