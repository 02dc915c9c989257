"""JumpStart spec provenance: a spec not fetched from the content bucket never reaches `pulumi up` unless the
stack opts in (and then summary.md flags the endpoint); `tools/refresh_jumpstart_snapshot.py` records where a
spec came from, validates the instance types the stacks configure, and model-package specs are refused."""

from __future__ import annotations

import json
import shutil

import boto3
import pytest
from moto import mock_aws
from plan_helpers import FACTS
from sagemaker_helpers import PUBLIC_ID, REGION, jumpstart_endpoint, stack
from stack_helpers import BASE_CONFIG, assert_rejected_before_any_resource, run_config

from serving_stack.config import parse_stack_config
from serving_stack.errors import ConfigError
from serving_stack.facts import sagemaker as jumpstart
from serving_stack.facts.sagemaker import PROVENANCE_FILE
from serving_stack.plan.sagemaker import plan_sagemaker_endpoints
from tools import refresh_jumpstart_snapshot
from tools.mock_runtime import PROJECT_DIR
from tools.summary import summary_markdown

SNAPSHOT = PROJECT_DIR / "catalog" / "jumpstart"
SPEC_KEY = f"community_models/{PUBLIC_ID}/specs_v1.0.0.json"
E0 = "sagemaker.endpoints[0]"


def sagemaker_block(**sagemaker):
    return stack(jumpstart_endpoint(), **sagemaker)["sagemaker"]


def test_the_committed_spec_has_no_provenance():
    assert not (SNAPSHOT / PROVENANCE_FILE).exists() or SPEC_KEY not in json.loads(
        (SNAPSHOT / PROVENANCE_FILE).read_text()
    )


def test_a_stack_on_the_unverified_spec_is_refused_with_one_line_naming_the_key():
    assert_rejected_before_any_resource(
        {**BASE_CONFIG, "sagemaker": sagemaker_block(allowUnverifiedSpecs=False)},
        f"{E0}.jumpstart: spec {SPEC_KEY} was not fetched from the JumpStart content bucket",
    )


def test_with_the_opt_in_it_renders_and_summary_flags_the_endpoint():
    run = run_config({**BASE_CONFIG, "sagemaker": sagemaker_block(allowUnverifiedSpecs=True)})
    assert run.of_type("aws:sagemaker/endpoint:Endpoint")
    summary = summary_markdown("test", run)
    (line,) = [line for line in summary.splitlines() if "UNVERIFIED JumpStart spec" in line]
    assert "`nemotron-js`" in line


@pytest.fixture
def bucket():
    """A content bucket holding the snapshot's manifest and spec (as AWS would serve a fetched one)."""
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(
            Bucket=f"jumpstart-cache-prod-{REGION}", CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        for path in SNAPSHOT.rglob("*.json"):
            s3.put_object(
                Bucket=f"jumpstart-cache-prod-{REGION}",
                Key=path.relative_to(SNAPSHOT).as_posix(),
                Body=path.read_bytes(),
            )
        yield s3


def refresh(tmp_path, *extra: str) -> int:
    return refresh_jumpstart_snapshot.main(
        ["--model-id", PUBLIC_ID, "--version", "1.0.0", "--region", REGION, "--snapshot-dir", str(tmp_path), *extra]
    )


def test_refresh_records_provenance_and_the_stack_then_needs_no_opt_in(bucket, tmp_path):
    assert refresh(tmp_path) == 0
    record = json.loads((tmp_path / PROVENANCE_FILE).read_text())[SPEC_KEY]
    etag = bucket.head_object(Bucket=f"jumpstart-cache-prod-{REGION}", Key=SPEC_KEY)["ETag"].strip('"')
    assert (record["bucket"], record["key"], record["etag"]) == (f"jumpstart-cache-prod-{REGION}", SPEC_KEY, etag)
    assert (tmp_path / SPEC_KEY).read_bytes() == (SNAPSHOT / SPEC_KEY).read_bytes()  # verbatim, so sha256 matches
    config = parse_stack_config(stack(jumpstart_endpoint(), allowUnverifiedSpecs=False))
    (planned,) = plan_sagemaker_endpoints(config, FACTS, source=jumpstart.SnapshotSpecSource(tmp_path))
    assert planned.source.provenance is not None
    assert planned.source.provenance.endswith(f"@sha256:{record['sha256'][:16]}")


def test_a_spec_edited_after_the_fetch_is_unverified_again(bucket, tmp_path):
    assert refresh(tmp_path) == 0
    spec = tmp_path / SPEC_KEY
    spec.write_text(spec.read_text().replace('"inference_volume_size": 256', '"inference_volume_size": 512'))
    with pytest.raises(ConfigError, match="was not fetched from the JumpStart content bucket"):
        jumpstart.resolve_jumpstart_model(
            PUBLIC_ID,
            "1.0.0",
            REGION,
            "ml.g6e.12xlarge",
            accept_eula=False,
            source=jumpstart.SnapshotSpecSource(tmp_path),
        )


def test_refresh_validates_the_instance_types_the_stack_configures(bucket, tmp_path, capsys):
    assert refresh(tmp_path, "--instance-type", "ml.p4d.24xlarge") == 1
    assert "does not support 'ml.p4d.24xlarge'" in capsys.readouterr().err
    assert refresh_jumpstart_snapshot.configured_instance_types(PUBLIC_ID, PROJECT_DIR) == []  # prod serves Lightning


def test_model_package_specs_are_refused(tmp_path):
    shutil.copytree(SNAPSHOT, tmp_path, dirs_exist_ok=True)
    spec_path = tmp_path / SPEC_KEY
    spec = json.loads(spec_path.read_text())
    spec["hosting_model_package_arns"] = {REGION: f"arn:aws:sagemaker:{REGION}:123456789012:model-package/x"}
    spec_path.write_text(json.dumps(spec))
    with pytest.raises(ConfigError) as raised:
        jumpstart.resolve_jumpstart_model(
            PUBLIC_ID,
            "1.0.0",
            REGION,
            "ml.g6e.12xlarge",
            accept_eula=False,
            source=jumpstart.SnapshotSpecSource(tmp_path),
            allow_unverified=True,
        )
    assert "is a model-package (Marketplace) model" in str(raised.value)
    assert "\n" not in str(raised.value)
