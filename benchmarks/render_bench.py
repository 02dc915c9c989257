"""Render benchmark (not a test): how much the stack program costs beyond importing its SDKs.

    .venv/bin/python benchmarks/render_bench.py [--repeat 5]

In one run, each in a fresh interpreter (best of --repeat rounds, the bodies interleaved in each round): a bare import of the SDKs the program
imports, the offline render of `prod`, and the offline render of a synthetic stack selecting every
catalog target. Prints wall time, peak RSS and the ratios to the bare import. Goal: all-targets
wall-time ratio <= 2.5.

Both sides run from bytecode, as on a user's second and later runs: each render runs once unmeasured first,
with bytecode written to a cache directory of the benchmark's own (`PYTHONPYCACHEPREFIX`; nothing is
written into the project or the virtualenv). What a first run without cached bytecode adds (this machine sets
`PYTHONDONTWRITEBYTECODE`, so every `make render` here pays it) is printed beside it: the time to compile the
project's modules the render loads, measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
GOAL = 2.5
PROJECT_SKIP = {".git", ".venv", "build"}
SDKS = ("pulumi", "pulumi_kubernetes", "pulumi_aws", "pulumi_policy", "pydantic", "yaml", "boto3", "botocore")

MEASURE = """
import json, resource, sys, time
start = time.perf_counter()
{body}
wall = time.perf_counter() - start
peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
sdks = sorted(m for m in sys.modules if m.split(".")[0] in {sdks!r} and not m.split(".")[-1].startswith("_"))
files = {{getattr(m, "__file__", None) or "" for m in list(sys.modules.values())}}
project = sorted(f for f in files if f.endswith(".py") and "/.venv" not in f and f.startswith({roots!r}))
print(json.dumps({{"wall": wall, "peakMiB": peak_mib, "sdks": sdks, "project": project}}))
"""


def run_once(body: str, bytecode: Path, roots: tuple[str, ...] = ()) -> dict:
    """One run of `body` in a fresh interpreter, bytecode cached in `bytecode`. `project`: the loaded
    modules' source files under `roots`."""
    script = MEASURE.format(body=body, sdks=SDKS, roots=roots or (str(ROOT),))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    output = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return json.loads(output.stdout.strip().splitlines()[-1])


def measure_interleaved(bodies: dict[str, tuple[str, tuple[str, ...]]], repeat: int, bytecode: Path) -> dict:
    """`repeat` rounds running each body once in turn, so drift in a shared machine's speed reaches a render
    and its bare import alike. Returns each body's runs."""
    runs: dict[str, list[dict]] = {name: [] for name in bodies}
    for _ in range(repeat):
        for name, (body, roots) in bodies.items():
            runs[name].append(run_once(body, bytecode, roots))
    return runs


def best(runs: list[dict]) -> dict:
    return min(runs, key=lambda r: r["wall"])


def compile_seconds(sources: list[str], repeat: int) -> float:
    """Best of `repeat`: compiling these source files, what a run without cached bytecode does first."""
    texts = [(path, Path(path).read_bytes()) for path in sources]
    fastest = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for path, text in texts:
            compile(text, path, "exec", dont_inherit=True)
        fastest = min(fastest, time.perf_counter() - started)
    return fastest


def catalog_ids() -> list[str]:
    return [t["id"] for t in yaml.safe_load((ROOT / "catalog" / "targets.yaml").read_text())["targets"]]


def all_targets_project(directory: Path) -> Path:
    """A project dir beside this repo's program whose `all-targets` stack selects every catalog target."""
    for entry in ROOT.iterdir():
        if entry.name not in PROJECT_SKIP and not entry.name.startswith("Pulumi."):
            (directory / entry.name).symlink_to(entry)
    (directory / "Pulumi.yaml").symlink_to(ROOT / "Pulumi.yaml")
    # dev's existing cluster (prod's pools hold only H200/B200), with every draft checkpoint cached.
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack["config"]["nemotron-lightning:targets"] = [{"id": target_id} for target_id in catalog_ids()]
    stack["config"]["nemotron-lightning:modelCache"].pop("checkpoints")
    (directory / "Pulumi.all-targets.yaml").write_text(yaml.safe_dump(stack))
    return directory


def render_body(stack: str, project_dir: Path, out_dir: Path) -> str:
    """The whole render; exit 1 (a mandatory policy finding, e.g. GB200 disaggregated targets whose
    fabric is not declared) still rendered everything, so it counts."""
    return (
        "from tools.render import main\n"
        f"assert main(['--stack', {stack!r}, '--project-dir', {str(project_dir)!r}, '--out', {str(out_dir)!r}, "
        "'--secret-placeholders']) in (0, 1)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        project = all_targets_project(Path(tempfile.mkdtemp(dir=tmp)))
        bytecode = tmp_path / "bytecode"
        sys.stdout.write("rendering...\n")
        renders = {
            "prod": (render_body("prod", ROOT, tmp_path / "out"), ()),
            "every": (render_body("all-targets", project, tmp_path / "out"), (str(ROOT), str(project))),
        }
        # Each render once unmeasured: it lists the SDK modules a bare import loads and caches the bytecode of
        # every module both sides load.
        sdks = {name: run_once(body, bytecode, roots)["sdks"] for name, (body, roots) in renders.items()}
        bare = {f"bare-{name}": ("\n".join(f"import {m}" for m in modules), ()) for name, modules in sdks.items()}
        runs = measure_interleaved({**renders, **bare}, args.repeat, bytecode)
        prod, every, bare_prod, bare_every = (best(runs[n]) for n in ("prod", "every", "bare-prod", "bare-every"))
        rounds = [r["wall"] / b["wall"] for r, b in zip(runs["every"], runs["bare-every"], strict=True)]
        resources = len(json.loads((tmp_path / "out" / "all-targets" / "resources.json").read_text()))
        compiling = compile_seconds(every["project"], args.repeat)
    rows = [
        (f"bare import of the {len(prod['sdks'])} SDK modules the prod render loads", bare_prod, bare_prod),
        ("render prod", prod, bare_prod),
        (f"bare import of the {len(every['sdks'])} SDK modules the all-targets render loads", bare_every, bare_every),
        (f"render all {len(catalog_ids())} targets ({resources} resources)", every, bare_every),
    ]
    width = max(len(label) for label, _, _ in rows)
    print(f"{'run':<{width}}  {'wall s':>7}  {'peak MiB':>8}  {'time ratio':>10}  {'memory ratio':>12}")
    for label, result, bare in rows:
        print(
            f"{label:<{width}}  {result['wall']:7.2f}  {result['peakMiB']:8.1f}  "
            f"{result['wall'] / bare['wall']:10.2f}  {result['peakMiB'] / bare['peakMiB']:12.2f}"
        )
    ratio = every["wall"] / bare_every["wall"]
    print(
        f"\nall-targets / bare import wall time: {ratio:.2f} (goal <= {GOAL}: {'PASS' if ratio <= GOAL else 'MISS'}; "
        f"per round {min(rounds):.2f}-{max(rounds):.2f})"
    )
    first = (every["wall"] + compiling) / bare_every["wall"]
    print(
        f"a first run without cached bytecode adds compiling the render's {len(every['project'])} project modules, "
        f"{compiling:.2f} s: {first:.2f}"
    )


if __name__ == "__main__":
    main()
