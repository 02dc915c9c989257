"""The layers import only downward, and no module imports itself back through another.

config (typed input) and facts (data loaders) rest on the base modules; the contract (outputs) on
nothing but the base; the plan on config, facts and contract; the components (top-level `components/`,
beside `__main__.py`) on the plan and facts. Neither the product nor the components import the tooling
beside them (`tools/`, the render). The policy pack (`policy/`, deployed on its own by CrossGuard) stands
alone: no product module imports it, and it imports nothing of the product or the tools.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (ROOT / "serving_stack", ROOT / "components")
BASE = {"credentials", "errors", "names", "pulumi_private"}
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
    return {name for name in found if name.split(".")[0] in PROJECT_ROOTS}


PROJECT_ROOTS = ("serving_stack", "components", "tools", "policy", "nemotron_policies")
NOT_FOR_THE_PRODUCT = ("tools", "policy", "nemotron_policies")  # the pack imports itself as nemotron_policies
NOT_FOR_THE_PACK = ("serving_stack", "components", "tools")
MODULES = {module_name(p): p for package in PACKAGES for p in sorted(package.rglob("*.py"))}
POLICY_MODULES = sorted((ROOT / "policy").rglob("*.py"))


def outside(path: Path, forbidden: tuple[str, ...]) -> list[str]:
    """What `path` imports from the forbidden top-level packages."""
    return sorted(i for i in imports_of(path) if i.split(".")[0] in forbidden)


GRAPH = {name: {i for i in imports_of(path) if i in MODULES and i != name} for name, path in MODULES.items()}


def test_every_module_belongs_to_a_layer():
    assert {layer_of(m) for m in MODULES if m not in ROOTS} <= set(ALLOWED)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m not in ROOTS))
def test_imports_go_only_downward(module):
    layer = layer_of(module)
    wrong = outside(MODULES[module], NOT_FOR_THE_PRODUCT)
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


def test_the_program_does_not_import_the_pack_or_the_tools():
    assert outside(ROOT / "__main__.py", NOT_FOR_THE_PRODUCT) == []


def test_there_is_a_policy_pack():
    assert (ROOT / "policy" / "nemotron_policies" / "pack.py") in POLICY_MODULES


@pytest.mark.parametrize("path", POLICY_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_policy_pack_stands_alone(path):
    assert outside(path, NOT_FOR_THE_PACK) == [], f"{path.relative_to(ROOT)} imports the product or the tools"


def test_the_checks_see_planted_imports(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from components.cluster import Network\nimport tools.render\n"
        "from policy.nemotron_policies.credentials import shapes\nfrom nemotron_policies import pack\n"
    )
    assert {name.split(".")[0] for name in outside(planted, NOT_FOR_THE_PRODUCT)} == set(NOT_FOR_THE_PRODUCT)
    assert {name.split(".")[0] for name in outside(planted, NOT_FOR_THE_PACK)} == {"components", "tools"}
