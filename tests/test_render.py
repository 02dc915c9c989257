"""`python -m tools.render` writes a deterministic, complete picture of a stack."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
import yaml
from stack_helpers import BASE_CONFIG, run_config

from serving_stack.contract.outputs import CONTRACT_VERSION
from serving_stack.facts.catalog import load_catalog
from tools.mock_runtime import PROJECT_DIR
from tools.render import main, write_render
from tools.write_outputs_schema import SCHEMA_FILE, schema_text


@pytest.fixture(scope="module")
def dev_render(tmp_path_factory):
    out = tmp_path_factory.mktemp("render")
    assert main(["--stack", "dev", "--out", str(out)]) == 0
    return out / "dev"


def test_two_renders_are_byte_identical(dev_render, tmp_path):
    assert main(["--stack", "dev", "--out", str(tmp_path)]) == 0
    first = {p.relative_to(dev_render): p.read_bytes() for p in dev_render.rglob("*") if p.is_file()}
    second = {p.relative_to(tmp_path / "dev"): p.read_bytes() for p in (tmp_path / "dev").rglob("*") if p.is_file()}
    assert first == second


def test_resources_json_is_sorted_and_redacts_secrets(tmp_path):
    write_render(run_config({**BASE_CONFIG, "dynamo": {"imagePullSecret": "ngc-registry"}}), "test", tmp_path)
    records = json.loads((tmp_path / "resources.json").read_text())
    assert [(r["type"], r["name"]) for r in records] == sorted((r["type"], r["name"]) for r in records)
    secrets = {r["name"]: r for r in records if r["type"] == "kubernetes:core/v1:Secret"}
    assert secrets["serving-hf-token"]["inputs"]["stringData"] == {"HF_TOKEN": "[secret]"}
    assert secrets["serving-pull-secret"]["inputs"]["stringData"] == {".dockerconfigjson": "[secret]"}
    assert {s["parent"] for s in secrets.values()} == {"nemotron:kubernetes:ServingNamespace::serving"}


def test_the_committed_dev_stack_needs_no_secret(dev_render):
    """Public images and checkpoints: no token Secret, no pull Secret, and the download Job reads none."""
    records = json.loads((dev_render / "resources.json").read_text())
    assert not [r for r in records if r["type"] == "kubernetes:core/v1:Secret"]
    (job,) = [
        r
        for r in records
        if r["type"] == "kubernetes:batch/v1:Job" and r["parent"].startswith("nemotron:kubernetes:ModelCache::")
    ]
    assert "envFrom" not in job["inputs"]["spec"]["template"]["spec"]["containers"][0]


def test_a_real_token_never_reaches_the_render(tmp_path):
    write_render(run_config(BASE_CONFIG), "test", tmp_path)
    written = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert "hf_test_token_value" not in written and "nvapi-test-key-value" not in written
    assert '"HF_TOKEN": "[secret]"' in written


def test_manifests_are_every_kubernetes_object_in_apply_order(dev_render):
    files = sorted(p.name for p in (dev_render / "manifests").iterdir())
    kinds = [yaml.safe_load((dev_render / "manifests" / f).read_text())["kind"] for f in files]
    assert kinds[0] == "Namespace"
    assert kinds[-1] == "DynamoGraphDeployment"
    assert kinds.index("PersistentVolumeClaim") < kinds.index("Job") < kinds.index("DynamoGraphDeployment")
    records = json.loads((dev_render / "resources.json").read_text())
    objects = [
        r
        for r in records
        if r["type"].startswith("kubernetes:") and r["custom"] and r["type"] != "kubernetes:helm.sh/v3:Release"
    ]
    assert len(files) == len(objects)
    assert not (dev_render / "helm").exists()  # dev's shared cluster runs the Dynamo platform already


def test_outputs_follow_the_committed_contract(dev_render):
    outputs = json.loads((dev_render / "outputs.json").read_text())
    jsonschema.validate(outputs, json.loads(SCHEMA_FILE.read_text()))
    assert outputs["contractVersion"] == CONTRACT_VERSION
    assert outputs["gateway"] is None  # dev runs no gateway
    (endpoint,) = outputs["endpoints"]
    recipe = load_catalog().recipe(endpoint["id"])
    assert endpoint["url"] == f"http://{recipe.name}-frontend.nemotron-dev.svc.cluster.local:8000/v1"
    assert (
        endpoint["gpus"] == 1
        and endpoint["expectedOutputTokensPerSecond"] == recipe.entry.performance.outputTokensPerSecondPerGpu
    )


def test_committed_schema_matches_the_model():
    assert SCHEMA_FILE.read_text() == schema_text(), "run `make schema` and commit the result"


def test_summary_names_targets_and_criteria(dev_render):
    summary = (dev_render / "summary.md").read_text()
    (endpoint,) = json.loads((dev_render / "outputs.json").read_text())["endpoints"]
    catalog = load_catalog()
    performance = catalog.recipe(endpoint["id"]).entry.performance
    verdict = {True: "pass", False: "FAIL", None: "n/a"}[catalog.criteria.passed_by(performance)]
    assert (
        f"| `{endpoint['id']}` | dynamo | 1 | {performance.outputTokensPerSecondPerGpu:,.2f} | "
        f"{performance.tokensPerSecondPerUser:g} | {performance.ttftP50Ms:g} | {verdict} |"
    ) in summary


def test_bad_config_exits_2_with_one_line_and_writes_nothing(tmp_path):
    (tmp_path / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.bad.yaml").write_text(
        "config:\n  nemotron-lightning:modelCache:\n    storageClassName: efs-ap\n"
        "  nemotron-lightning:kubernetes:\n    cluster: {context: nemotron-dev}\n"
        "  nemotron-lightning:targets:\n    - id: vllm/agg-h100-nope\n"
    )
    for name in ("__main__.py", "components", "nemotron", "catalog"):
        (tmp_path / name).symlink_to(PROJECT_DIR / name)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.render",
            "--stack",
            "bad",
            "--out",
            str(tmp_path / "build"),
            "--project-dir",
            str(tmp_path),
        ],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line == "error: targets[0].id: unknown target 'vllm/agg-h100-nope'; allowed: " + ", ".join(
        load_catalog().recipes
    )
    assert not (tmp_path / "build").exists()


def test_a_mandatory_policy_violation_fails_the_render_with_a_report(tmp_path, capsys):
    (tmp_path / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.unpinned.yaml").write_text(
        "config:\n  nemotron-lightning:kubernetes:\n    cluster: {source: kubeconfig, context: x}\n"
        "  nemotron-lightning:modelCache:\n    storageClassName: efs-ap\n"
        "  nemotron-lightning:targets:\n    - id: vllm/agg-h100-mtp\n      image: quay.io/someone/vllm-runtime:1.5.0\n"
    )
    for name in ("__main__.py", "components", "nemotron", "catalog", "prewarm"):
        (tmp_path / name).symlink_to(PROJECT_DIR / name)
    assert main(["--stack", "unpinned", "--project-dir", str(tmp_path), "--out", str(tmp_path / "build")]) == 1
    error = capsys.readouterr().err
    assert "[mandatory]" in error and "image-pinning" in error and "quay.io/someone/vllm-runtime:1.5.0" in error
    assert "violates mandatory policies" in error
    assert "image-pinning" in (tmp_path / "build" / "unpinned" / "policy-report.txt").read_text()


def test_committed_stacks_pass_every_mandatory_policy(dev_render):
    assert "mandatory" not in (dev_render / "policy-report.txt").read_text().replace("0 mandatory", "")


def test_the_render_collects_garbage_in_batches_and_restores_the_collector(monkeypatch):
    import gc

    import tools.render as render

    seen = []
    monkeypatch.setattr(render, "_main", lambda argv: seen.append(gc.get_threshold()) or 0)
    before = gc.get_threshold()
    assert render.main(["--stack", "dev"]) == 0
    assert seen[0][0] == render.BATCH_GC_THRESHOLD > before[0]
    assert gc.get_threshold() == before
