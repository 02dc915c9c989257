"""The layers import only downward, and no module imports itself back through another.

config (typed input) and facts (data loaders) rest on the base modules; the contract (outputs) on
nothing but the base; the plan on config, facts and contract; the components (top-level `components/`,
beside `__main__.py`) on the plan and facts. Neither the package nor the components import the tooling
beside them (`tools/`, the render).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (ROOT / "serving_stack", ROOT / "components")
BASE = {"errors", "names", "pulumi_private"}
ALLOWED = {
    "base": set(),
    "config": {"base"},
    "facts": {"base"},
    "contract": {"base"},
    "plan": {"base", "config", "facts", "contract"},
    "components": {"base", "facts", "plan"},
}


ROOTS = {"serving_stack", "components"}  # the packages' own __init__ modules


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    if module.split(".")[0] == "components":
        return "components"
    part = module.split(".")[1] if module.count(".") else ""
    return "base" if part in BASE else part


def imports_of(path: Path) -> set[str]:
    """Project modules `path` imports (absolute imports; `from x import y` may name a module y)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.split(".")[0] in ("serving_stack", "components", "tools")}


MODULES = {module_name(p): p for package in PACKAGES for p in sorted(package.rglob("*.py"))}
GRAPH = {name: {i for i in imports_of(path) if i in MODULES and i != name} for name, path in MODULES.items()}


def test_every_module_belongs_to_a_layer():
    assert {layer_of(m) for m in MODULES if m not in ROOTS} <= set(ALLOWED)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m not in ROOTS))
def test_imports_go_only_downward(module):
    layer = layer_of(module)
    wrong = sorted(i for i in imports_of(MODULES[module]) if i.startswith("tools"))
    wrong += sorted(i for i in GRAPH[module] if layer_of(i) != layer and layer_of(i) not in ALLOWED[layer])
    assert not wrong, f"{module} ({layer}) imports {wrong}"


def test_no_import_cycles():
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for target in sorted(GRAPH[name]):
            if state.get(target) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*stack[stack.index(target) :], target]))
            if target not in state:
                visit(target)
        stack.pop()
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name)


def test_the_check_sees_a_planted_upward_import(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("from components.cluster import Network\nimport tools.render\n")
    assert imports_of(planted) >= {"components.cluster", "tools.render"}
