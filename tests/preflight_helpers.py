"""Helpers for the preflight tests: moto's server on loopback, clients routed to it or to a botocore Stubber
(whose responses botocore validates against the service model), and stacks built in a test.

moto implements EC2's zones, instance types and offerings (AWS's own data, snapshotted in moto) and STS; it
lacks the EC2 Service Quotas, capacity reservations, EKS DescribeClusterVersions and the SageMaker quotas:
those paths get a Stubber.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import boto3
import botocore.config
from botocore.stub import Stubber
from moto.moto_server.threaded_moto_server import ThreadedMotoServer

from serving_stack.config import parse_stack_config
from tools.mock_runtime import PROJECT_DIR
from tools.preflight.aws import ClientFactory
from tools.preflight.stack import PreflightStack

FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
# The project's own files a scratch project links to (its stack files are the test's own).
PROJECT_ENTRIES = (
    "Pulumi.yaml",
    "__main__.py",
    "serving_stack",
    "components",
    "catalog",
    "policy",
    "prewarm",
    "ops",
    "tools",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """moto's server on 127.0.0.1 (a free port), stopped at the end; yields its URL."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def moto_client(url: str, service: str, region: str) -> Any:
    return boto3.session.Session(**{k.lower(): v for k, v in FAKE_CREDENTIALS.items()}).client(
        service,
        region_name=region,
        endpoint_url=url,
        config=botocore.config.Config(retries={"max_attempts": 1}, connect_timeout=5, read_timeout=20),
    )


class Clients:
    """A `ClientFactory`: moto's server for the services moto implements, one Stubber'd client per service the
    test plants answers for (`stub(service)`), the same client for every call of a service."""

    def __init__(self, url: str, region: str):
        self.url, self.region = url, region
        self.clients: dict[str, Any] = {}
        self.stubbers: dict[str, Stubber] = {}
        self.calls: list[tuple[str, str]] = []  # (service, operation) of every call made

    def stub(self, service: str) -> Stubber:
        client = self(service, self.region)
        stubber = Stubber(client)
        stubber.activate()
        self.stubbers[service] = stubber
        return stubber

    def __call__(self, service: str, region: str) -> Any:
        assert region == self.region, f"a {service} client for {region}, not the stack's {self.region}"
        if service not in self.clients:
            client = moto_client(self.url, service, region)
            client.meta.events.register("before-call.*.*", self._record)
            self.clients[service] = client
        return self.clients[service]

    def _record(self, model: Any, **_: Any) -> None:
        self.calls.append((model.service_model.service_name, model.name))

    def factory(self) -> ClientFactory:
        return self


def stack_of(raw: dict[str, Any], name: str = "test") -> PreflightStack:
    """A PreflightStack from a raw config without the program run (no rendered objects): for the AWS checks,
    which read the config and the plan only."""
    from plan_helpers import plan_of

    return PreflightStack(name=name, config=parse_stack_config(raw), plan=plan_of(raw), objects=(), releases=())


def write_project(root: Path, stacks: dict[str, dict[str, Any]], project: Optional[str] = None) -> Path:
    """A scratch Pulumi project: links to this repository's program and data, and its own stack files
    (`stacks`: name -> unprefixed config, written as the CLI writes `Pulumi.<name>.yaml`)."""
    root.mkdir(parents=True, exist_ok=True)
    for entry in PROJECT_ENTRIES:
        (root / entry).symlink_to(PROJECT_DIR / entry)
    name = project or "nemotron-lightning"
    for stack, config in stacks.items():
        document = {"config": {f"{name}:{key}": value for key, value in config.items()}}
        (root / f"Pulumi.{stack}.yaml").write_text(json.dumps(document, indent=2))
    return root
