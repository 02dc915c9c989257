"""Pin one JumpStart model version into the committed snapshot (`catalog/jumpstart/`), with provenance.

The stack resolves JumpStart models from the snapshot so previews are repeatable and need no S3 access,
and refuses a spec without provenance; this tool is the only writer. It copies the manifest entry and the
spec for exactly one (model id, version) from the regional content bucket (the SDK's
`AWS_JUMPSTART_CONTENT_BUCKET_OVERRIDE` names a mirror), byte for byte, records where it came from in
`provenance.json` (bucket, key, ETag, sha256, date), replaces any other pinned version of that model, and
resolves the result for the spec's default instance type and every instance type the stacks configure for
the model (or `--instance-type`), so a spec this stack cannot deploy fails here, not in CI.

    python -m tools.refresh_jumpstart_snapshot --model-id ID --version 1.2.3 --region us-west-2
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from serving_stack.facts.sagemaker import (
    MANIFEST_KEY,
    PROVENANCE_FILE,
    JumpStartError,
    S3SpecSource,
    SnapshotSpecSource,
    content_bucket,
    read_provenance_file,
    resolve_jumpstart_model,
    sha256_hex,
)
from tools.secret_placeholders import stack_config_of
from tools.stack_files import PROJECT_DIR, project_name, stack_config, stack_names

DEFAULT_SNAPSHOT = PROJECT_DIR / "catalog" / "jumpstart"


def configured_instance_types(model_id: str, project_dir: Path = PROJECT_DIR) -> list[str]:
    """Instance types the committed `Pulumi.<stack>.yaml` files deploy this JumpStart model on (read as the
    program reads them)."""
    project, found = project_name(project_dir), []
    for stack in stack_names(project_dir):
        endpoints = stack_config_of(stack_config(stack, project_dir)[0], project).sagemaker.endpoints
        found += [e.instanceType for e in endpoints if e.jumpstart and e.jumpstart.modelId == model_id]
    return found


def refresh(model_id: str, version: str, region: str, snapshot: Path, s3_client: Any, today: str) -> dict[str, Any]:
    """Copy one manifest entry and its spec into `snapshot` and record the spec's provenance; return the entry."""
    live = S3SpecSource(region, s3_client)
    manifest = live.read_json(MANIFEST_KEY)
    entry = next((e for e in manifest if e["model_id"] == model_id and e["version"] == version), None)
    if entry is None:
        versions = sorted(e["version"] for e in manifest if e["model_id"] == model_id)
        found = f"published versions: {', '.join(versions)}" if versions else "no such model id"
        raise SystemExit(f"{model_id} {version} is not in s3://{content_bucket(region)}/{MANIFEST_KEY}; {found}")
    key = entry["spec_key"]
    response = s3_client.get_object(Bucket=content_bucket(region), Key=key)
    body = response["Body"].read()

    local_manifest_path = snapshot / MANIFEST_KEY
    pinned = json.loads(local_manifest_path.read_text()) if local_manifest_path.exists() else []
    provenance = read_provenance_file(snapshot)
    for old in (e for e in pinned if e["model_id"] == model_id and e["spec_key"] != key):
        (snapshot / old["spec_key"]).unlink(missing_ok=True)
        provenance.pop(old["spec_key"], None)
    pinned = sorted([e for e in pinned if e["model_id"] != model_id] + [entry], key=lambda e: e["model_id"])

    spec_path = snapshot / key
    spec_path.parent.mkdir(parents=True, exist_ok=True)
    spec_path.write_bytes(body)  # verbatim: the recorded sha256 is the bucket object's
    local_manifest_path.write_text(json.dumps(pinned, indent=2) + "\n")
    provenance[key] = {
        "bucket": content_bucket(region),
        "key": key,
        "etag": str(response.get("ETag", "")).strip('"'),
        "sha256": sha256_hex(body),
        "fetched": today,
        "region": region,
    }
    (snapshot / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2, sort_keys=True) + "\n")
    return dict(entry)


def check(model_id: str, version: str, region: str, snapshot: Path, instance_types: list[str]) -> list[str]:
    """Resolve the pinned spec (provenance required) for each instance type; one line per result."""
    source = SnapshotSpecSource(snapshot)
    lines = []
    for instance_type in instance_types:
        resolved = resolve_jumpstart_model(model_id, version, region, instance_type, accept_eula=True, source=source)
        spec = resolved.provenance.label() if resolved.provenance else "?"
        data = resolved.container.model_data
        lines.append(
            f"  {instance_type}: {resolved.container.image}\n    model data: {data.s3_uri if data else None}"
            f"\n    gated: {resolved.gated}; spec {spec}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add = parser.add_argument
    add("--model-id", required=True, help="JumpStart model id, exactly as in the manifest")
    add("--version", required=True, help="exact version to pin (no '*')")
    add("--region", required=True, help="region whose content bucket to read, e.g. us-west-2")
    also = "also resolve for this instance type (default: those the Pulumi.<stack>.yaml files configure)"
    add("--instance-type", action="append", default=[], help=also)
    add("--snapshot-dir", type=Path, default=DEFAULT_SNAPSHOT, help="default: %(default)s")
    args = parser.parse_args(argv)
    if not args.version or "*" in args.version:
        parser.error(f"--version {args.version!r}: pin an exact version")

    try:
        s3_client = boto3.client("s3", region_name=args.region)
        entry = refresh(
            args.model_id, args.version, args.region, args.snapshot_dir, s3_client, datetime.date.today().isoformat()
        )
    except (BotoCoreError, ClientError) as error:
        print(f"cannot read s3://{content_bucket(args.region)}: {error}", file=sys.stderr)
        return 1
    spec = SnapshotSpecSource(args.snapshot_dir).read_json(entry["spec_key"])
    wanted = [
        spec.get("default_inference_instance_type") or "",
        *(args.instance_type or configured_instance_types(args.model_id)),
    ]
    try:
        lines = check(args.model_id, args.version, args.region, args.snapshot_dir, list(dict.fromkeys(wanted)))
    except JumpStartError as error:
        print(f"pinned {entry['spec_key']}, but it does not resolve: {error}", file=sys.stderr)
        return 1
    print(f"pinned {entry['spec_key']} (provenance in {args.snapshot_dir / PROVENANCE_FILE})", *lines, sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
