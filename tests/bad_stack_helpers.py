"""Invalid stack files rendered the way a user renders them: `tools.render.main` in-process on a throwaway
project (the program, catalog and packages linked in), with a stale previous render in `build/<stack>/`.

A case is a stack file (text, bytes, or the committed dev/prod file with edits) and the key path its one
error line must start with. `assert_refused` checks everything issue 12 asks of a refusal: exit code 2,
one line, `error: <key path>: ...`, bounded length and echo, nothing registered, no stale output.
"""

from __future__ import annotations

import contextlib
import copy
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import yaml

from serving_stack.errors import MAX_LINE
from tools.mock_runtime import PROJECT_DIR, run_program
from tools.render import EXIT_CONFIG, main

PROJECT = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())["name"]
LINKED = ("__main__.py", "catalog", "prewarm", "ops", "serving_stack", "tools", "policy")
STACK = "case"
STACK_FILE = f"Pulumi.{STACK}.yaml"
ECHO_LIMIT = 200  # characters of the user's input one error line may repeat (issue 12)
DELETE = object()


class Raw(str):
    """A value written into the YAML text verbatim (an unquoted date, `yes`), not as YAML would quote it."""


@dataclass(frozen=True)
class Outcome:
    code: int
    stderr: str
    registered: Optional[int]  # resources the program registered; None when the program never ran
    stale_left: bool


class ThrowawayProject:
    """A Pulumi project directory whose program, data and packages are this repository's."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
        for name in LINKED:
            (root / name).symlink_to(PROJECT_DIR / name)

    def render(self, content: Union[str, bytes], placeholders: bool = True) -> Outcome:
        """`placeholders`: as `make render` runs it (`--secret-placeholders`); False: as close to `up` as the
        render gets (placeholder values refused)."""
        stack_file = self.root / STACK_FILE
        if isinstance(content, bytes):
            stack_file.write_bytes(content)
        else:
            stack_file.write_text(content)
        out_dir = self.root / "build" / STACK
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "stale.txt").write_text("a previous render\n")
        if hasattr(run_program, "last_monitor"):
            del run_program.last_monitor
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            code = main(
                [
                    "--stack",
                    STACK,
                    "--project-dir",
                    str(self.root),
                    "--out",
                    str(self.root / "build"),
                    *(["--secret-placeholders"] if placeholders else []),
                ]
            )
        monitor = getattr(run_program, "last_monitor", None)
        return Outcome(
            code,
            stderr.getvalue(),
            None if monitor is None else len(monitor.recorded),
            (out_dir / "stale.txt").exists(),
        )


def committed(stack: str) -> dict[str, Any]:
    """The committed `Pulumi.<stack>.yaml` as data."""
    return yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())


def config_value(stack: str, path: str) -> Any:
    """A value of a committed stack at a key path such as `targets[0].id`."""
    node: Any = committed(stack)["config"]
    for part in _parts(path):
        node = node[part]
    return node


def _parts(path: str) -> list[Union[str, int]]:
    """`targets[0].replicas.agg` -> ['nemotron-lightning:targets', 0, 'replicas', 'agg'] (provider keys such as
    `aws:region` stay as they are)."""
    first, _, rest = path.partition(".")
    head = re.match(r"[^\[]+", first)[0]  # type: ignore[index]
    parts: list[Union[str, int]] = [head if ":" in head else f"{PROJECT}:{head}"]
    for index, name in re.findall(r"\[(\d+)\]|([^.\[\]]+)", first[len(head) :] + ("." + rest if rest else "")):
        parts.append(int(index) if index else name)
    return parts


def edited(stack: str, edits: dict[str, Any]) -> str:
    """The committed stack file with values set (or `DELETE`d) at key paths, as YAML text."""
    document = copy.deepcopy(committed(stack))
    raws: dict[str, str] = {}
    for path, value in edits.items():
        *parents, last = _parts(path)
        node: Any = document["config"]
        for part in parents:
            node = node.setdefault(part, {}) if isinstance(node, dict) else node[part]
        if value is DELETE:
            del node[last]
        elif isinstance(value, Raw):
            raws[f"raw-value-{len(raws)}"] = str(value)
            node[last] = f"raw-value-{len(raws) - 1}"
        else:
            node[last] = value
    text = yaml.safe_dump(document, sort_keys=False, width=1 << 30)
    for placeholder, raw in raws.items():
        text = text.replace(placeholder, raw)
    return text


def assert_refused(project: ThrowawayProject, content: Union[str, bytes], key: str, placeholders: bool = True) -> str:
    """The render refuses the file as issue 12 asks; returns the error line."""
    outcome = project.render(content, placeholders)
    assert outcome.code == EXIT_CONFIG, outcome
    lines = outcome.stderr.splitlines()
    assert len(lines) == 1, outcome.stderr[:2000]
    line = lines[0]
    assert line.startswith(f"error: {key}: "), line[:400]
    assert len(line) <= len("error: ") + MAX_LINE, len(line)
    assert outcome.registered in (None, 0), f"{outcome.registered} resources registered"
    assert not outcome.stale_left, "the previous render is still in build/<stack>/"
    return line


def longest_run(line: str, character: str) -> int:
    """The longest run of one character in a line (how much of a long repeated input it echoes)."""
    return max((len(run) for run in re.findall(f"{re.escape(character)}+", line)), default=0)
