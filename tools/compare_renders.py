"""Render the stacks a restructuring must not change and compare them with a saved reference, byte for byte.

    python -m tools.compare_renders --save /work/wt-23-reference   # before the change
    python -m tools.compare_renders /work/wt-23-reference          # after: prints every difference

The stacks: `dev`, `prod` and `sandbox` as committed, `all-targets` (dev's cluster selecting every catalog target, the
stack `benchmarks/render_bench.py` times) and `prod-planned` (prod's demand planned and written into the stack
file by `make plan ... WRITE=1`, every planned target under the autoscaler: docs/capacity.md's worked
example). Each renders in its own interpreter, as `make render` does. Exit 0 when everything is identical.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from tools.mock_runtime import PROJECT_DIR

STACKS = ("dev", "prod", "sandbox", "all-targets", "prod-planned")
# prod-planned runs cluster-autoscaler, whose pinned image is tied to an older Kubernetes minor than prod's
# (catalog/autoscaling.yaml): it renders at that minor on a day EKS still supports it (tests/conftest.py's).
PLANNED_TODAY = "2026-06-01"
PROJECT_SKIP = {".git", ".venv", "build"}


def project_beside(directory: Path) -> Path:
    """A project dir whose entries link to this repo's, for stack files that are not committed."""
    directory.mkdir(parents=True, exist_ok=True)
    for entry in PROJECT_DIR.iterdir():
        if entry.name not in PROJECT_SKIP and not entry.name.startswith("Pulumi."):
            (directory / entry.name).symlink_to(entry)
    (directory / "Pulumi.yaml").symlink_to(PROJECT_DIR / "Pulumi.yaml")
    return directory


def write_all_targets_stack(project: Path) -> None:
    """dev's existing cluster (prod's pools hold only H200/B200), with every draft checkpoint cached."""
    stack = yaml.safe_load((PROJECT_DIR / "Pulumi.dev.yaml").read_text())
    stack["config"]["nemotron-lightning:targets"] = [
        {"id": t["id"]} for t in yaml.safe_load((PROJECT_DIR / "catalog" / "targets.yaml").read_text())["targets"]
    ]
    stack["config"]["nemotron-lightning:modelCache"].pop("checkpoints")
    (project / "Pulumi.all-targets.yaml").write_text(yaml.safe_dump(stack))


def write_prod_planned_stack(project: Path) -> None:
    """prod with every target of its `demand:` plan scaled between one replica set and twice the planned sets,
    its targets and pools then written by `make plan STACK=prod-planned WRITE=1`."""
    from serving_stack.facts import load_facts
    from tools.plan_capacity.cli import plan_of_stack

    stack = yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())
    path = project / "Pulumi.prod-planned.yaml"
    path.write_text(yaml.safe_dump(stack))
    plan = plan_of_stack("prod-planned", project).plan
    assert plan is not None, "prod's demand has a plan"
    bounds = {p.target_id: {"minReplicaSets": 1, "maxReplicaSets": 2 * p.replica_sets} for p in plan.placements}
    stack["config"]["nemotron-lightning:autoscaling"] = {"targets": bounds}
    minor = load_facts().autoscaling.clusterAutoscaler.imageTag.removeprefix("v").rsplit(".", 1)[0]
    stack["config"]["nemotron-lightning:aws"]["cluster"]["create"]["kubernetesVersion"] = minor
    path.write_text(yaml.safe_dump(stack))
    command = [sys.executable, "-m", "tools.plan_capacity", "--stack", "prod-planned", "--write"]
    subprocess.run([*command, "--project-dir", str(project)], cwd=PROJECT_DIR, check=True, capture_output=True)


def render(stack: str, project: Path, out: Path) -> str:
    """Render one stack into out/<stack>; returns what the render printed (exit 1, a refused `up`, still
    renders everything)."""
    command = [sys.executable, "-m", "tools.render", "--stack", stack, "--project-dir", str(project)]
    command += ["--out", str(out), "--secret-placeholders"]
    if stack == "prod-planned":
        command += ["--today", PLANNED_TODAY]
    done = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"render of {stack} failed ({done.returncode}):\n{done.stderr}")
    return f"exit {done.returncode}\n{done.stdout}{done.stderr}"


def render_all(out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="compare-renders-"))
    try:
        project = project_beside(work / "project")
        write_all_targets_stack(project)
        write_prod_planned_stack(project)
        for stack in ("dev", "prod", "sandbox"):
            (project / f"Pulumi.{stack}.yaml").symlink_to(PROJECT_DIR / f"Pulumi.{stack}.yaml")
        with ThreadPoolExecutor(max_workers=2) as pool:
            logs = dict(zip(STACKS, pool.map(lambda s: render(s, project, out), STACKS), strict=True))
        for stack, log in logs.items():
            (out / stack / "render.log").write_text(log.replace(str(project), "<project>").replace(str(out), "<out>"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def differences(reference: Path, current: Path) -> list[str]:
    """Each file only on one side and each changed line of every stack (GNU `diff -ru`)."""
    lines: list[str] = []
    for stack in STACKS:
        command = ["diff", "-ru", str(reference / stack), str(current / stack)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        lines += (done.stdout + done.stderr).splitlines()  # stderr: a stack missing on one side
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.compare_renders", description=__doc__.split("\n\n")[0])
    parser.add_argument("reference", type=Path, help="the saved reference renders (one directory per stack)")
    parser.add_argument("--save", action="store_true", help="render into the reference directory instead")
    args = parser.parse_args(argv)
    if args.save:
        shutil.rmtree(args.reference, ignore_errors=True)
        args.reference.mkdir(parents=True)
        render_all(args.reference)
        print(f"saved {', '.join(STACKS)} -> {args.reference}")
        return 0
    with tempfile.TemporaryDirectory(prefix="current-renders-") as tmp:
        current = Path(tmp)
        render_all(current)
        lines = differences(args.reference, current)
    print("\n".join(lines) if lines else f"identical: {', '.join(STACKS)}")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
