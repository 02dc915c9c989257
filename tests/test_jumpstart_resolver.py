"""The JumpStart resolver reads a content bucket (moto) the way the SageMaker SDK does, and the
committed snapshot gives the same answer as the bucket it copies."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from serving_stack.facts import sagemaker as jumpstart
from serving_stack.facts.sagemaker import (
    MANIFEST_KEY,
    ConfigKeys,
    JumpStartError,
    S3SpecSource,
    SnapshotSpecSource,
    resolve_jumpstart_model,
)

REPO = Path(__file__).resolve().parent.parent
SNAPSHOT = REPO / "catalog" / "jumpstart"
TEST_SPECS = REPO / "tests" / "data" / "jumpstart"
REGION = "us-west-2"
PUBLIC_ID = "huggingface-reasoning-nvidia-nemotron-3-nano-30b-a3b-bf16"
GATED_ID = "test-gated-nemotron-shaped"
GATED_PREFIX = "test-gated/test-gated-nemotron-shaped/artifacts/inference-prepack/v2.1.0/"
KEYS = ConfigKeys.under("sagemaker.endpoints[0].jumpstart")
LMI_IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128"


def seed_content_bucket(s3, bucket: str) -> None:
    """One manifest listing the public snapshot and the gated test spec, each spec at its key."""
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    manifest = []
    for root in (SNAPSHOT, TEST_SPECS):
        manifest += json.loads((root / MANIFEST_KEY).read_text())
        for path in root.glob("community_models/*/*.json"):
            s3.put_object(Bucket=bucket, Key=path.relative_to(root).as_posix(), Body=path.read_bytes())
    s3.put_object(Bucket=bucket, Key=MANIFEST_KEY, Body=json.dumps(manifest).encode())


@pytest.fixture
def s3():
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        seed_content_bucket(client, f"jumpstart-cache-prod-{REGION}")
        gated = f"jumpstart-private-cache-prod-{REGION}"
        client.create_bucket(Bucket=gated, CreateBucketConfiguration={"LocationConstraint": REGION})
        client.put_object(Bucket=gated, Key=f"{GATED_PREFIX}model-00001-of-00004.safetensors", Body=b"weights")
        yield client


def resolve(source, model_id=PUBLIC_ID, version="1.0.0", instance_type="ml.g6e.12xlarge", accept_eula=False):
    """Hand-made specs (the committed snapshot, the test specs) have no provenance: allowed here; the refusal
    is tests/test_jumpstart_provenance.py's subject."""
    return resolve_jumpstart_model(
        model_id,
        version,
        REGION,
        instance_type,
        accept_eula=accept_eula,
        source=source,
        keys=KEYS,
        allow_unverified=True,
    )


def test_public_model_resolves_image_artifact_prefix_and_deploy_settings(s3):
    model = resolve(S3SpecSource(REGION, s3))
    assert model.container.image == LMI_IMAGE
    assert model.container.model_data == jumpstart.S3ModelData(
        "s3://jumpstart-cache-prod-us-west-2/huggingface-reasoning/"
        "huggingface-reasoning-nvidia-nemotron-3-nano-30b-a3b-bf16/artifacts/inference-prepack/v1.0.0/",
        "S3Prefix",
        "None",
        None,
    )
    assert (model.gated, model.eula_key, model.container.additional_model_data) == (False, None, ())
    assert (model.defaults.model_data_download_timeout, model.defaults.container_startup_health_check_timeout) == (
        1200,
        1200,
    )
    assert (model.defaults.volume_size_gb, model.container.enable_network_isolation) == (256, True)


def test_environment_is_spec_defaults_then_family_then_instance_type(s3):
    environment = resolve(S3SpecSource(REGION, s3)).container.environment
    assert environment["HF_MODEL_ID"] == "/opt/ml/model"  # spec default
    assert environment["ENDPOINT_SERVER_TIMEOUT"] == "3600"  # int default, stringified
    assert environment["OPTION_MAX_MODEL_LEN"] == "65536"  # g6e family beats the default 32768
    assert environment["OPTION_GPU_MEMORY_UTILIZATION"] == "0.92"  # instance type beats family 0.90
    assert (environment["SM_NUM_GPUS"], environment["OPTION_TENSOR_PARALLEL_DEGREE"]) == ("4", "4")
    assert "SAGEMAKER_PROGRAM" not in environment  # script-mode only: required_for_model_class false


def test_instance_type_variant_image_beats_family_image(s3):
    source = S3SpecSource(REGION, s3)
    h200 = resolve(source, GATED_ID, "2.1.0", "ml.p5en.48xlarge", accept_eula=True)
    l40s = resolve(source, GATED_ID, "2.1.0", "ml.g6e.12xlarge", accept_eula=True)
    assert h200.container.image == "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:test-h200-build"
    assert l40s.container.image == LMI_IMAGE
    assert h200.container.model_data.s3_uri.endswith("/inference-prepack/v2.1.0-h200/")  # per-instance key


def test_gated_model_reads_private_bucket_with_eula_accepted(s3):
    model = resolve(S3SpecSource(REGION, s3), GATED_ID, "2.1.0", "ml.g6e.12xlarge", accept_eula=True)
    data = model.container.model_data
    assert data == jumpstart.S3ModelData(
        f"s3://jumpstart-private-cache-prod-us-west-2/{GATED_PREFIX}", "S3Prefix", "None", True
    )
    bucket, prefix = data.s3_uri.removeprefix("s3://").split("/", 1)
    assert s3.list_objects_v2(Bucket=bucket, Prefix=prefix)["KeyCount"] == 1
    assert (model.gated, model.config_name) == (True, "lmi")


def test_ranked_config_adds_speculative_draft_channel_where_supported(s3):
    model = resolve(S3SpecSource(REGION, s3), GATED_ID, "2.1.0", "ml.p5en.48xlarge", accept_eula=True)
    assert model.config_name == "lmi-optimized"
    assert model.container.additional_model_data == (
        jumpstart.AdditionalModelData(
            "draft_model",
            jumpstart.S3ModelData(
                "s3://jumpstart-private-cache-prod-us-west-2/test-gated/test-gated-nemotron-shaped/artifacts/draft/v1/",
                "S3Prefix",
                "None",
                True,
            ),
        ),
    )
    assert (
        model.container.environment["OPTION_SPECULATIVE_DRAFT_MODEL"]
        == "/opt/ml/additional-model-data-sources/draft_model"
    )
    assert (
        model.container.environment["SM_NUM_GPUS"] == "8"
    )  # the component merged into the variants, not replaced them


def test_gated_model_without_eula_names_accept_eula_key_and_eula(s3):
    with pytest.raises(JumpStartError) as error:
        resolve(S3SpecSource(REGION, s3), GATED_ID, "2.1.0", "ml.p5.48xlarge")
    assert error.value.key_path == "sagemaker.endpoints[0].jumpstart.acceptEula"
    assert str(error.value) == (
        "sagemaker.endpoints[0].jumpstart.acceptEula: test-gated-nemotron-shaped 2.1.0 is gated and needs its EULA "
        "accepted; allowed: true, set after reading the EULA at https://jumpstart-cache-prod-us-west-2.s3.us-west-2"
        ".amazonaws.com/fmhMetadata/eula/test-gated-nemotron-shaped-eula.txt"
    )


@pytest.mark.parametrize(
    ("model_id", "version", "instance_type", "key", "message"),
    [
        (
            PUBLIC_ID.removesuffix("-bf16"),
            "1.0.0",
            "ml.g6e.12xlarge",
            "modelId",
            f"unknown JumpStart model id '{PUBLIC_ID.removesuffix('-bf16')}'; allowed: {PUBLIC_ID}",
        ),
        (PUBLIC_ID, "*", "ml.g6e.12xlarge", "version", "'*' is not pinned; pin a version; allowed: 1.0.0"),
        (PUBLIC_ID, "", "ml.g6e.12xlarge", "version", "'' is not pinned; pin a version; allowed: 1.0.0"),
        (PUBLIC_ID, "1.1.0", "ml.g6e.12xlarge", "version", f"{PUBLIC_ID} has no version '1.1.0'; allowed: 1.0.0"),
        (
            PUBLIC_ID,
            "1.0.0",
            "ml.g5.12xlarge",
            "instanceType",
            f"{PUBLIC_ID} 1.0.0 does not support 'ml.g5.12xlarge'; "
            "allowed: ml.g6e.12xlarge, ml.p5.48xlarge, ml.p5en.48xlarge",
        ),
    ],
)
def test_bad_settings_name_the_key_and_what_is_allowed(s3, model_id, version, instance_type, key, message):
    with pytest.raises(JumpStartError) as error:
        resolve(S3SpecSource(REGION, s3), model_id, version, instance_type)
    assert str(error.value) == f"sagemaker.endpoints[0].jumpstart.{key}: {message}"


def test_bucket_overrides_move_specs_and_artifacts(s3, monkeypatch):
    seed_content_bucket(s3, "jumpstart-mirror")
    monkeypatch.setenv(jumpstart.CONTENT_BUCKET_OVERRIDE, "jumpstart-mirror")
    s3.delete_object(Bucket=f"jumpstart-cache-prod-{REGION}", Key=MANIFEST_KEY)  # only the mirror can answer
    assert resolve(S3SpecSource(REGION, s3)).container.model_data.s3_uri.startswith("s3://jumpstart-mirror/")
    monkeypatch.setenv(jumpstart.GATED_BUCKET_OVERRIDE, "private-mirror")
    gated = resolve(S3SpecSource(REGION, s3), GATED_ID, "2.1.0", accept_eula=True)
    assert gated.container.model_data.s3_uri == f"s3://private-mirror/{GATED_PREFIX}"
    monkeypatch.setenv(jumpstart.MODEL_BUCKET_OVERRIDE, "artifact-mirror")
    assert resolve(S3SpecSource(REGION, s3)).container.model_data.s3_uri.startswith("s3://artifact-mirror/")


@pytest.mark.parametrize(
    ("model_id", "version", "instance_type", "root"),
    [
        (PUBLIC_ID, "1.0.0", "ml.p5.48xlarge", SNAPSHOT),
        (GATED_ID, "2.1.0", "ml.p5en.48xlarge", TEST_SPECS),
    ],
)
def test_snapshot_resolves_like_the_bucket_it_copies(s3, model_id, version, instance_type, root):
    from_bucket = resolve(S3SpecSource(REGION, s3), model_id, version, instance_type, accept_eula=True)
    assert from_bucket.provenance is not None
    assert from_bucket.provenance.bucket == f"jumpstart-cache-prod-{REGION}"
    from_snapshot = resolve(SnapshotSpecSource(root), model_id, version, instance_type, accept_eula=True)
    assert from_snapshot == replace(from_bucket, provenance=None)  # same values; only the read proves provenance


def test_local_directory_overrides_redirect_the_snapshot(monkeypatch):
    monkeypatch.setenv(jumpstart.MANIFEST_DIR_OVERRIDE, str(TEST_SPECS))
    monkeypatch.setenv(jumpstart.SPECS_DIR_OVERRIDE, str(TEST_SPECS))
    model = resolve(SnapshotSpecSource(SNAPSHOT), GATED_ID, "2.1.0", "ml.p5.48xlarge", accept_eula=True)
    assert (model.model_id, model.container.image) == (GATED_ID, LMI_IMAGE)
