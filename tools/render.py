"""Offline render: run the stack program under Pulumi's mock runtime and write what it would deploy.

    python -m tools.render --stack dev [--out build]

Writes `build/<stack>/`: `manifests/` (every Kubernetes object, ready for `kubectl apply -f`), `helm/` (each
Helm release's inputs), `resources.json` (every resource, sorted; secrets as "[secret]"), `outputs.json` (the
outputs contract), `summary.md`, `policy-report.txt` (the policy pack on the recorded resources, as `pulumi
preview --policy-pack policy` would) and `warnings.txt` (what renders but needs a decision, such as a retired
target). Bad input exits 2 with the one-line error and writes nothing; a mandatory policy violation or a
blocking rollout finding exits 1.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from serving_stack.contract.outputs import StackOutputs
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.dates import TODAY_ENV
from tools.mock_runtime import PROJECT_DIR, ProgramRun, RecordedResource, run_program
from tools.rollout import analyse
from tools.rollout import markdown as rollout_markdown
from tools.rollout.graph import HELM_RELEASE, Resource
from tools.secret_placeholders import stack_inputs
from tools.summary import stack_cost_line, summary_markdown

WARNINGS_FILE = "warnings.txt"
EXIT_REFUSED = 1  # the stack renders but a real `up` would fail: a mandatory policy or a blocking rollout finding
EXIT_CONFIG = 2  # bad input: nothing is rendered
# kubectl apply order: what others refer to goes first; custom resources last.
APPLY_ORDER = {
    **dict.fromkeys(["Namespace"], 0),
    **dict.fromkeys(["StorageClass", "PriorityClass"], 1),
    **dict.fromkeys(["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"], 2),
    **dict.fromkeys(["Secret", "ConfigMap"], 3),
    **dict.fromkeys(["PersistentVolumeClaim"], 4),
    **dict.fromkeys(["Job"], 5),
    **dict.fromkeys(["DaemonSet", "Deployment"], 6),
}
CUSTOM_RESOURCE_ORDER = 7
BATCH_GC_THRESHOLD = 50_000


def kubernetes_objects(resources: list[RecordedResource] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recorded Kubernetes resources (not providers, not Helm releases) as plain objects; from the
    resources or from their `to_json()` records."""
    records = [r if isinstance(r, dict) else r.to_json() for r in resources]
    return [r["inputs"] for r in records if Resource.from_record(r).is_kubernetes_object]


def _manifest_file(obj: dict[str, Any]) -> str:
    order, metadata = APPLY_ORDER.get(obj["kind"], CUSTOM_RESOURCE_ORDER), obj["metadata"]
    return f"{order:02d}-{obj['kind'].lower()}-{metadata.get('namespace', 'cluster')}-{metadata['name']}.yaml"


def _dump_yaml(data: Any) -> str:
    """libyaml's emitter (PyYAML's wheels bundle it): a tenth of the pure-Python emitter's time."""
    return yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=True, default_flow_style=False, width=120)


def write_render(run: ProgramRun, stack: str, out_dir: Path, records: list[dict[str, Any]] | None = None) -> None:
    """Into `out_dir`, which holds no earlier render (`main` clears it first). `records`: the resources'
    `to_json()`, when the caller already made them."""
    records = sorted(records or [r.to_json() for r in run.resources], key=lambda r: (r["type"], r["name"]))
    manifests = out_dir / "manifests"
    manifests.mkdir(parents=True)
    for obj in kubernetes_objects(records):
        (manifests / _manifest_file(obj)).write_text(_dump_yaml(obj))
    for release in (r for r in records if r["type"] == HELM_RELEASE):
        (out_dir / "helm").mkdir(exist_ok=True)
        (out_dir / "helm" / f"{release['name']}.yaml").write_text(_dump_yaml(release["inputs"]))
    (out_dir / "resources.json").write_text(json.dumps(records, indent=2, sort_keys=True) + "\n")
    contract = StackOutputs.model_validate(run.outputs)
    (out_dir / "outputs.json").write_text(json.dumps(contract.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    (out_dir / "summary.md").write_text(summary_markdown(stack, run))
    (out_dir / WARNINGS_FILE).write_text("".join(f"{w}\n" for w in (run.plan.warnings if run.plan else ())))


def main(argv: list[str] | None = None) -> int:
    """A render builds one large graph of objects that live until it ends, and the collector's default
    threshold (a young collection every 700 allocations) rescans them hundreds of times: about a tenth of
    the render's time (`benchmarks/render_bench.py`). Every 50,000 allocations instead, for the render only;
    peak memory grows by about 5%."""
    thresholds = gc.get_threshold()
    gc.set_threshold(BATCH_GC_THRESHOLD, *thresholds[1:])
    try:
        return _main(argv)
    finally:
        gc.set_threshold(*thresholds)


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.render", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--stack", default="dev", help="stack name: reads Pulumi.<stack>.yaml (default: dev)")
    add("--out", type=Path, default=PROJECT_DIR / "build", help="output root (default: build/)")
    add("--project-dir", type=Path, default=PROJECT_DIR, help="the Pulumi project (default: this repo)")
    add("--policy-config", type=Path, help="policy pack config JSON (as `pulumi --policy-pack-config`)")
    add(
        "--secret-placeholders",
        "--placeholders",
        dest="placeholders",
        action="store_true",
        help="render the secrets set out of band (gatewayMasterKey) that the stack requires but "
        'its file lacks as "[secret]", accept flagged placeholder values (documentation CIDRs, example '
        "accounts, unread image tags) that `pulumi up` refuses, and name both",
    )
    add("--today", help=f"the date the dated facts are judged on, YYYY-MM-DD (default: ${TODAY_ENV} or the clock)")
    args = parser.parse_args(argv)
    out_dir = args.out / args.stack
    try:
        today = _date(args.today) if args.today is not None else None
        _clear_out(out_dir)
        inputs = stack_inputs(args.stack, args.project_dir, placeholders=args.placeholders)
        pack_config = _pack_config(args.policy_config)
        run = run_program(
            inputs.config,
            inputs.secret_keys,
            args.stack,
            args.project_dir,
            allow_placeholders=args.placeholders,
            today=today,
        )
        records = [r.to_json() for r in run.resources]
        _write_out(run, args.stack, out_dir, records)
        rollout = analyse(records)
    except ConfigError as error:
        shutil.rmtree(out_dir, ignore_errors=True)  # a bad rollout data file is found after the write
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    # The policy pack on the recorded resources, as `pulumi preview --policy-pack policy` runs it.
    from policy.nemotron_policies.offline import evaluate, format_report

    violations = evaluate(run.resources, pack_config, stack=args.stack)
    report, mandatory_violated = format_report(violations), any(v.mandatory for v in violations)
    try:
        with (out_dir / "summary.md").open("a") as summary:
            summary.write("\n" + rollout_markdown(rollout))
            if inputs.placeholders:
                summary.write(f"\n{inputs.note(args.stack)}\n")
        (out_dir / "policy-report.txt").write_text(report)
    except OSError as error:
        shutil.rmtree(out_dir, ignore_errors=True)
        print(f"error: {_out_error(out_dir, error)}", file=sys.stderr)
        return EXIT_CONFIG
    print(f"rendered stack {args.stack!r}: {len(run.resources)} resources -> {out_dir}")
    print(stack_cost_line(StackOutputs.model_validate(run.outputs)))
    if run.plan is not None:
        for warning in run.plan.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if run.plan.placeholders:
            print(
                f"Rendered with {len(run.plan.placeholders)} placeholder value(s) that `pulumi up` refuses "
                f"(listed in {out_dir / 'summary.md'})",
                file=sys.stderr,
            )
    if inputs.placeholders:
        print(inputs.note(args.stack), file=sys.stderr)
    for finding in rollout.blocking:
        print(finding.line(), file=sys.stderr)
    if mandatory_violated:
        print(report, file=sys.stderr)
        print(
            f"error: stack {args.stack!r} violates mandatory policies (report: {out_dir / 'policy-report.txt'})",
            file=sys.stderr,
        )
    return EXIT_REFUSED if rollout.blocking or mandatory_violated else 0


def _date(text: str) -> str:
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        raise ConfigError("--today", f"{bounded(text)} is not a date", "YYYY-MM-DD") from None


def _out_error(out_dir: Path, error: OSError) -> ConfigError:
    """An output path the render cannot write (a file where a directory goes, no permission, a full disk)."""
    where = bounded(error.filename or str(out_dir), quote=False)
    return ConfigError("--out", f"cannot write {where}: {bounded(error.strerror or str(error), quote=False)}")


def _clear_out(out_dir: Path) -> None:
    """Before anything runs: the output path is (or can become) a directory, and the previous render is
    removed, since a failed render must not leave it looking current."""
    existing = next(p for p in (out_dir, *out_dir.parents) if p.exists() or p.is_symlink())
    if not existing.is_dir():
        raise ConfigError("--out", f"{bounded(str(existing), quote=False)} is a file, not a directory")
    try:
        if existing == out_dir:
            shutil.rmtree(out_dir)
    except OSError as error:
        raise _out_error(out_dir, error) from None


def _write_out(run: ProgramRun, stack: str, out_dir: Path, records: list[dict[str, Any]]) -> None:
    try:
        write_render(run, stack, out_dir, records)
    except OSError as error:
        shutil.rmtree(out_dir, ignore_errors=True)  # no half-written render left behind
        raise _out_error(out_dir, error) from None


def _pack_config(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ConfigError("--policy-config", f"cannot read {path.name}: {bounded(str(error), quote=False)}") from None
    if not isinstance(loaded, dict):
        raise ConfigError("--policy-config", "is not a JSON object")
    from policy.nemotron_policies.pack_config import PackConfigError, validate_pack_config

    try:
        validate_pack_config(loaded)  # before the render: a wrong key never leaves a half-written build/
    except PackConfigError as error:
        raise ConfigError("--policy-config", str(error)) from None
    return loaded


if __name__ == "__main__":
    sys.exit(main())
