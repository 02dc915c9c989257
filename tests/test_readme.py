"""The README is the first screen of a platform engineer with the Pulumi CLI and an AWS account: at most 250
lines, the deploy sequence within its first 60, every command it names exists, every config key it sets is a
key of the stack-config schema, it sets every placeholder of the stack it deploys, and every link resolves."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
LINES = README.splitlines()
SCHEMA = json.loads((ROOT / "schemas" / "stack-config.schema.json").read_text())
PROJECT = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["name"]

DEPLOY_SEQUENCE = (
    "pulumi login",
    "pulumi stack init",
    "pulumi config set --secret",
    "make preflight",
    "pulumi preview --diff --policy-pack policy",
    "pulumi up",
    "pulumi stack output",
    "curl -s http://localhost",
    "pulumi destroy",
)


def _commands() -> list[str]:
    """The README's shell commands: lines of its ```bash blocks, comments and continuations folded."""
    commands: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            command = line.split(" # ")[0].strip()
            if command:
                commands.append(command)
    return commands


def test_short_with_the_deploy_sequence_first_and_in_order() -> None:
    assert len(LINES) <= 250
    first = "\n".join(LINES[:60])
    positions = [first.find(step) for step in DEPLOY_SEQUENCE]
    assert all(p >= 0 for p in positions), [s for s, p in zip(DEPLOY_SEQUENCE, positions, strict=True) if p < 0]
    assert positions == sorted(positions), "the deploy steps are out of order"


def test_every_make_target_it_names_exists() -> None:
    makefile = (ROOT / "Makefile").read_text()
    defined = set(re.findall(r"^([a-z][a-z0-9-]*):", makefile, re.M))
    named = set(re.findall(r"`make ([a-z][a-z0-9-]*)", README)) | {
        c.split()[1] for c in _commands() if c.startswith("make ")
    }
    assert named and named <= defined, named - defined


def _resolved(node: dict) -> dict:
    """A schema node with its `$ref` and optional (`anyOf` with null) wrappers taken off."""
    while True:
        if "$ref" in node:
            node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
        elif "anyOf" in node:
            node = next(n for n in node["anyOf"] if n.get("type") != "null")
        else:
            return node


def _schema_node(path: list[str]) -> dict | None:
    node: dict | None = SCHEMA["properties"]["config"]["properties"].get(f"{PROJECT}:{path[0]}")
    for part in path[1:]:
        if node is None:
            return None
        node = _resolved(node)
        node = node.get("items") if part.isdigit() else node.get("properties", {}).get(part)
    return node


def _config_paths() -> dict[str, str]:
    """`pulumi config set --path '<key>' <value>` of the README: key path -> value as written."""
    paths: dict[str, str] = {}
    for command in _commands():
        words = shlex.split(command, posix=True) if "$(" not in command else command.split()
        if words[:3] == ["pulumi", "config", "set"] and "--path" in words:
            rest = [w for w in words[3:] if w != "--path"]
            paths[rest[0].strip("'")] = rest[1] if len(rest) > 1 else ""
    return paths


def test_every_config_key_it_sets_is_in_the_schema() -> None:
    paths = _config_paths()
    assert paths
    for path in paths:
        parts = [p for p in re.split(r"[.\[\]]+", path) if p]
        assert _schema_node(parts) is not None, f"README sets {path}, which the stack-config schema does not have"


def test_it_sets_every_placeholder_of_the_stack_it_deploys() -> None:
    """Each value of Pulumi.sandbox.yaml that the render lists as a placeholder is set by a README command."""
    stack = re.search(r"pulumi stack init (\S+)", README)
    assert stack
    summary_lines = _placeholder_keys(stack.group(1))
    set_paths = set(_config_paths())
    missing = [key for key in summary_lines if not any(key.startswith(p) or p.startswith(key) for p in set_paths)]
    assert summary_lines and not missing, missing


def _placeholder_keys(stack: str) -> list[str]:
    from serving_stack.facts.placeholders import load_placeholder_facts
    from serving_stack.plan.placeholders import config_placeholders

    written = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]
    ours = {key.split(":", 1)[1]: value for key, value in written.items() if key.startswith(f"{PROJECT}:")}
    return [found.key for found in config_placeholders(ours, load_placeholder_facts())]


def test_every_link_resolves() -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), f"README links to {target}, which does not exist"
