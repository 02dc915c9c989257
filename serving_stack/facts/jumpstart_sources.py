"""Where JumpStart manifests and specs come from, and whether a spec is the one the content bucket serves.

A spec is *verified* when it carries provenance: read from the content bucket just now (`S3SpecSource`:
bucket, key, ETag, sha256), or committed by `tools/refresh_jumpstart_snapshot.py`, which records the same
in `provenance.json` beside the specs; the snapshot checks the file's sha256 against that record, so a
spec edited after it was fetched is unverified again. The SDK's bucket and directory overrides are honoured
(a documented mirror is still a fetch; its bucket is part of the record).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Protocol

from serving_stack.errors import ConfigError, bounded, key_path
from serving_stack.facts.strict_files import load_json, parse_json, read_bytes

MANIFEST_KEY = "models_manifest.json"
PROVENANCE_FILE = "provenance.json"
CONTENT_BUCKET_OVERRIDE = "AWS_JUMPSTART_CONTENT_BUCKET_OVERRIDE"
GATED_BUCKET_OVERRIDE = "AWS_JUMPSTART_GATED_CONTENT_BUCKET_OVERRIDE"
MODEL_BUCKET_OVERRIDE = "AWS_JUMPSTART_MODEL_BUCKET_OVERRIDE"
MANIFEST_DIR_OVERRIDE = "AWS_JUMPSTART_MANIFEST_LOCAL_ROOT_DIR_OVERRIDE"
SPECS_DIR_OVERRIDE = "AWS_JUMPSTART_SPECS_LOCAL_ROOT_DIR_OVERRIDE"
ENVIRONMENT_OVERRIDES = (
    CONTENT_BUCKET_OVERRIDE,
    GATED_BUCKET_OVERRIDE,
    MODEL_BUCKET_OVERRIDE,
    MANIFEST_DIR_OVERRIDE,
    SPECS_DIR_OVERRIDE,
)
PROJECT_DIR = Path(__file__).resolve().parents[2]


def content_bucket(region: str) -> str:
    """Specs and public artifacts; the override lets a mirror or a test bucket stand in."""
    return os.environ.get(CONTENT_BUCKET_OVERRIDE) or f"jumpstart-cache-prod-{region}"


def gated_bucket(region: str) -> str:
    """Artifacts of EULA-gated models, readable only with `ModelAccessConfig.AcceptEula`."""
    return os.environ.get(GATED_BUCKET_OVERRIDE) or f"jumpstart-private-cache-prod-{region}"


def sha256_hex(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


@dataclass(frozen=True)
class SpecProvenance:
    """Where a spec was read: the object in the content bucket, its ETag and the sha256 of its bytes."""

    bucket: str
    key: str
    etag: str
    sha256: str
    fetched: Optional[str] = None  # ISO date the snapshot was taken; None for a live read

    def label(self) -> str:
        """Short and stable (no date), fit for an AWS tag value (at most 256 characters)."""
        return f"s3://{self.bucket}/{self.key}@sha256:{self.sha256[:16]}"


class SpecSource(Protocol):
    """The live content bucket, or a committed copy of it."""

    def read_json(self, key: str) -> Any: ...

    def read_spec(self, key: str) -> tuple[dict[str, Any], Optional[SpecProvenance]]: ...


@dataclass(frozen=True)
class S3SpecSource:
    """Reads the regional content bucket, as the SDK does; every spec it reads is verified by the read."""

    region: str
    s3_client: Any

    def _get(self, key: str) -> tuple[bytes, str]:
        response = self.s3_client.get_object(Bucket=content_bucket(self.region), Key=key)
        return response["Body"].read(), str(response.get("ETag", "")).strip('"')

    def read_json(self, key: str) -> Any:
        return json.loads(self._get(key)[0])

    def read_spec(self, key: str) -> tuple[dict[str, Any], Optional[SpecProvenance]]:
        body, etag = self._get(key)
        return json.loads(body), SpecProvenance(content_bucket(self.region), key, etag, sha256_hex(body))


@dataclass(frozen=True)
class SnapshotSpecSource:
    """Reads a directory laid out like the bucket, so previews are repeatable and need no S3 access.

    The SDK's local-directory overrides still win, so one checkout can point at a freshly fetched copy.
    """

    directory: Path

    def _root(self, key: str) -> Path:
        override = os.environ.get(MANIFEST_DIR_OVERRIDE if key == MANIFEST_KEY else SPECS_DIR_OVERRIDE)
        return Path(override or self.directory)

    def read_json(self, key: str) -> Any:
        path, label = snapshot_file(self._root(key), key)
        return load_json(path, label)

    def read_spec(self, key: str) -> tuple[dict[str, Any], Optional[SpecProvenance]]:
        root = self._root(key)
        path, label = snapshot_file(root, key)
        body = read_bytes(path, label, label)
        spec = parse_json(body, label, label)
        if not isinstance(spec, dict):
            raise ConfigError(label, f"is a JSON {type(spec).__name__}, not an object (a JumpStart spec)")
        return spec, recorded_provenance(root, key, body)


def file_label(path: Path) -> str:
    """A snapshot file as errors name it: relative to the project (`catalog/jumpstart/...`) where it is inside."""
    try:
        return path.relative_to(PROJECT_DIR).as_posix()
    except ValueError:
        return bounded(str(path), quote=False)


def snapshot_file(root: Path, key: str) -> tuple[Path, str]:
    """`root/key`, kept inside `root` (a manifest's `spec_key` is data too), and its label."""
    base = root.resolve()
    try:
        path = (base / key).resolve()
    except (OSError, RuntimeError, ValueError):
        path = base / "?"
    if not path.is_relative_to(base):
        raise ConfigError(file_label(base), f"the key {bounded(key)} leads out of the snapshot directory")
    return path, file_label(path)


PROVENANCE_FIELDS = ("bucket", "key", "etag", "sha256")


def read_provenance_file(root: Path) -> dict[str, dict[str, Any]]:
    path = root / PROVENANCE_FILE
    if not path.is_file():
        return {}
    label = file_label(path.resolve())
    records = load_json(path, label)
    if not isinstance(records, dict):
        raise ConfigError(label, f"is a JSON {type(records).__name__}, not an object of records by spec key")
    for spec_key, record in records.items():
        where = f"{label}: {key_path([spec_key])}"
        if not isinstance(record, dict):
            raise ConfigError(where, f"is a JSON {type(record).__name__}, not an object")
        missing = [f for f in PROVENANCE_FIELDS if not isinstance(record.get(f), str)]
        if missing or not isinstance(record.get("fetched", ""), str):
            raise ConfigError(f"{where}.{(missing or ['fetched'])[0]}", "is missing or not a string")
    return records


def recorded_provenance(root: Path, key: str, body: bytes) -> Optional[SpecProvenance]:
    """The record `tools/refresh_jumpstart_snapshot.py` wrote for `key`, if the bytes are still those it fetched."""
    record = read_provenance_file(root).get(key)
    if record is None or record.get("sha256") != sha256_hex(body):
        return None
    return SpecProvenance(record["bucket"], record["key"], record["etag"], record["sha256"], record.get("fetched"))
