"""Malformed stack files (not a mapping, YAML syntax, tabs, duplicate and non-string keys, dates where a
string or a number belongs, encodings, sizes) each refused with exit 2 and one bounded line that names the
file (and line) or the key path, with nothing registered and no stale render left behind."""

from __future__ import annotations

import pytest
from bad_stack_helpers import (
    DELETE,
    PROJECT,
    STACK_FILE,
    Raw,
    ThrowawayProject,
    assert_refused,
    committed,
    config_value,
    edited,
)

from serving_stack.facts.catalog import load_catalog
from serving_stack.facts.strict_files import MAX_FILE_BYTES

DEV = edited("dev", {})
WORKER = load_catalog().recipe(config_value("dev", "targets[0].id")).worker_components()[0]["name"]
CACHE_KEY = "nemotron-lightning:modelCache"


def _dev_with(line_after: str, inserted: str) -> str:
    """The dev file with text inserted after the first line containing `line_after`."""
    head, found, tail = DEV.partition(line_after)
    assert found, line_after
    end = tail.index("\n") + 1
    return head + found + tail[:end] + inserted + tail[end:]


CASES: dict[str, tuple[str | bytes, str]] = {
    # The document or `config:` is not a mapping.
    "top level a list": ("- config\n- targets\n", STACK_FILE),
    "top level a string": ("just some words\n", STACK_FILE),
    "top level a number": ("42\n", STACK_FILE),
    "config a list": ("config:\n  - nemotron-lightning:modelCache\n", f"{STACK_FILE}: config"),
    "config a string": ("config: modelCache\n", f"{STACK_FILE}: config"),
    "config a number": ("config: 3\n", f"{STACK_FILE}: config"),
    "empty file (no modelCache)": ("", "modelCache"),
    # YAML syntax.
    "unclosed flow sequence": (DEV.replace("drafts: []", "drafts: [a, b"), STACK_FILE),
    "mapping value where none is allowed": (DEV.replace("size: 300Gi", "size: 300Gi: 1"), STACK_FILE),
    "unterminated quoted string": (DEV.replace("size: 300Gi", "size: '300Gi"), STACK_FILE),
    "bad indentation": (DEV.replace("    size: 300Gi", "      size: 300Gi"), STACK_FILE),
    "tab indentation": (DEV.replace("    size: 300Gi", "\tsize: 300Gi"), STACK_FILE),
    # Duplicate keys: YAML says a mapping's keys are unique; PyYAML would keep the last silently.
    "duplicate config key": (DEV + f"  {CACHE_KEY}:\n    storageClassName: other\n", STACK_FILE),
    "duplicate nested key": (_dev_with("size: 300Gi", "    size: 1Ti\n"), STACK_FILE),
    # Non-string keys (`1:`, `yes:`, `~:`), at the top, under config and nested.
    "integer key at the top": (DEV + "1: one\n", f"{STACK_FILE}: 1"),
    "integer key under config": (DEV + "  7: seven\n", f"{STACK_FILE}: config.7"),
    "integer key nested": (_dev_with("size: 300Gi", "    1: x\n"), "modelCache.1"),
    "boolean key nested": (_dev_with("namespace: nemotron-dev", "    true: x\n"), "kubernetes.True"),
    "yes as a key is the string yes": (_dev_with("namespace: nemotron-dev", "    yes: x\n"), "kubernetes.yes"),
    "null key in a list item": (_dev_with("- id:", "    ~: x\n"), "targets[0].None"),
    "complex key": (_dev_with("size: 300Gi", "    ? [a, b]\n    : x\n"), STACK_FILE),
    # Config namespaces: the project's, the providers' (aws, kubernetes) and Pulumi's; a key is named readably.
    "unknown config namespace": (edited("dev", {"bogus:thing": 1}), "bogus:thing"),
    "typo'd provider namespace": (edited("prod", {"aws:region": DELETE, "aws_:region": "us-east-1"}), "aws_:region"),
    "empty project key": (edited("dev", {f"{PROJECT}:": 1}), "''"),
    # Dates stay strings (as the CLI reads them) and then fail the type where they land.
    "date as a runtime tag": (edited("dev", {"dynamo.runtime.tag": Raw("2024-01-01")}), "dynamo.runtime.tag"),
    "date as a replica count": (
        edited("dev", {f"targets[0].replicas.{WORKER}": Raw("2024-01-01")}),
        f"targets[0].replicas.{WORKER}",
    ),
    "timestamp as a Kubernetes version": (
        edited("prod", {"aws.cluster.create.kubernetesVersion": Raw("2025-06-01T10:00:00Z")}),
        "aws.cluster.create.kubernetesVersion",
    ),
    # Encoding and size.
    "non-UTF-8 bytes": (DEV.replace("efs-ap", "efs-\xff").encode("latin-1"), STACK_FILE),
    "UTF-16 file": (DEV.encode("utf-16"), STACK_FILE),
    "larger than a stack file may be": (DEV + "#" * MAX_FILE_BYTES + "\n", STACK_FILE),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return ThrowawayProject(tmp_path_factory.mktemp("bad-files"))


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_file_is_refused(project, case):
    content, key = CASES[case]
    assert_refused(project, content, key)


def test_syntax_errors_give_line_and_column(project):
    line = assert_refused(project, CASES["tab indentation"][0], STACK_FILE)
    row = DEV.splitlines().index("    size: 300Gi") + 1
    assert f"is not valid YAML (line {row}, column 1)" in line


def test_the_unedited_base_renders(project):
    """The cases above differ from a file that renders by the one defect each names."""
    assert committed("dev")["config"][CACHE_KEY]["size"] == "300Gi"
    outcome = project.render(DEV)
    assert (outcome.code, outcome.stale_left) == (0, False), outcome.stderr
    assert outcome.registered


def test_provider_and_pulumi_namespaces_pass(project):
    """`kubernetes:`, `aws:` and Pulumi's own keys are not the program's to refuse."""
    content = edited("dev", {"kubernetes:context": "nemotron-dev", "pulumi:tags": {"team": "inference"}})
    outcome = project.render(content)
    assert outcome.code == 0, outcome.stderr
