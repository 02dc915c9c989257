"""Pin one JumpStart model version into the committed snapshot (`catalog/jumpstart/`).

The stack resolves JumpStart models from the snapshot so previews are repeatable and need no S3
access; this tool is the only writer. It copies the manifest entry and the spec for exactly one
(model id, version) from the regional content bucket, replaces any other pinned version of that
model, and resolves the result once so a spec this stack cannot deploy fails here, not in CI.

    python -m tools.refresh_jumpstart_snapshot --model-id ID --version 1.2.3 --region us-west-2
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from serving_stack.facts.jumpstart import (
    MANIFEST_KEY,
    JumpStartError,
    S3SpecSource,
    SnapshotSpecSource,
    content_bucket,
    resolve_jumpstart_model,
)

DEFAULT_SNAPSHOT = Path(__file__).resolve().parent.parent / "catalog" / "jumpstart"


def refresh(model_id: str, version: str, region: str, snapshot: Path) -> dict[str, Any]:
    """Copy one manifest entry and its spec into `snapshot`; return the new entry."""
    live = S3SpecSource(region, boto3.client("s3", region_name=region))
    manifest = live.read_json(MANIFEST_KEY)
    entry = next((e for e in manifest if e["model_id"] == model_id and e["version"] == version), None)
    if entry is None:
        versions = sorted(e["version"] for e in manifest if e["model_id"] == model_id)
        found = f"published versions: {', '.join(versions)}" if versions else "no such model id"
        raise SystemExit(f"{model_id} {version} is not in s3://{content_bucket(region)}/{MANIFEST_KEY}; {found}")
    spec = live.read_json(entry["spec_key"])

    local_manifest_path = snapshot / MANIFEST_KEY
    pinned = json.loads(local_manifest_path.read_text()) if local_manifest_path.exists() else []
    for old in (e for e in pinned if e["model_id"] == model_id and e["spec_key"] != entry["spec_key"]):
        (snapshot / old["spec_key"]).unlink(missing_ok=True)
    pinned = sorted([e for e in pinned if e["model_id"] != model_id] + [entry], key=lambda e: e["model_id"])

    spec_path = snapshot / entry["spec_key"]
    spec_path.parent.mkdir(parents=True, exist_ok=True)
    spec_path.write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n")
    local_manifest_path.write_text(json.dumps(pinned, indent=2) + "\n")
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-id", required=True, help="JumpStart model id, exactly as in the manifest")
    parser.add_argument("--version", required=True, help="exact version to pin (no '*')")
    parser.add_argument("--region", required=True, help="region whose content bucket to read, e.g. us-west-2")
    parser.add_argument("--snapshot-dir", type=Path, default=DEFAULT_SNAPSHOT, help="default: %(default)s")
    args = parser.parse_args(argv)
    if not args.version or "*" in args.version:
        parser.error(f"--version {args.version!r}: pin an exact version")

    try:
        entry = refresh(args.model_id, args.version, args.region, args.snapshot_dir)
    except (BotoCoreError, ClientError) as error:
        print(f"cannot read s3://{content_bucket(args.region)}: {error}", file=sys.stderr)
        return 1
    spec = SnapshotSpecSource(args.snapshot_dir).read_json(entry["spec_key"])
    instance_type = spec.get("default_inference_instance_type") or ""
    try:
        resolved = resolve_jumpstart_model(args.model_id, args.version, args.region, instance_type,
                                           accept_eula=True, source=SnapshotSpecSource(args.snapshot_dir))
    except JumpStartError as error:
        print(f"pinned {entry['spec_key']}, but it does not resolve: {error}", file=sys.stderr)
        return 1
    print(f"pinned {entry['spec_key']}\n  {instance_type}: {resolved.image_uri}\n"
          f"  model data: {resolved.model_data_source.s3_uri}\n  gated: {resolved.gated}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
