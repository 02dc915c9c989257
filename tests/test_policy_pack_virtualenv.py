"""`pulumi preview --policy-pack policy` (the README's command) runs the pack in the virtualenv its
PulumiPolicy.yaml names: that virtualenv is the one the README's setup (`make render`) creates, and it can run
the pack's entry point's imports."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / "policy"


def _pack_virtualenv() -> Path:
    options = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())["runtime"]["options"]
    return (PACK / options["virtualenv"]).resolve()


def _makefile_variable(name: str) -> str:
    match = re.search(rf"^{name}\s*:=\s*(\S+)\s*$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, f"Makefile defines no {name}"
    return match.group(1)


def test_the_pack_virtualenv_is_the_one_make_render_creates() -> None:
    assert _pack_virtualenv() == (ROOT / _makefile_variable("VENV")).resolve()
    render_deps = re.search(r"^\$\(VENV\)/\.render-deps:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert render_deps and "policy/requirements.txt" in render_deps.group(1)


def test_the_pack_virtualenv_imports_what_the_pack_imports() -> None:
    python = _pack_virtualenv() / "bin" / "python"
    # Under `make test` the running interpreter is that virtualenv's; run the pack's imports from the pack's
    # own directory, as the analyzer does.
    assert Path(sys.prefix).resolve() == _pack_virtualenv(), "run the tests from the project's .venv"
    done = subprocess.run(
        [str(python), "-c", "import pulumi_policy, nemotron_policies.pack"],
        cwd=PACK,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
