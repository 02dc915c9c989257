"""The end-to-end harness's `pulumi-analyzer-policy-python` (tools/e2e/bin), started the way the Pulumi CLI
starts an analyzer for a Python pack (pulumi/pulumi sdk/go/common/resource/plugin/analyzer_plugin.go: in the
pack's directory, with the engine's address, "." and the pack's runtime options from PulumiPolicy.yaml as
`-<key>=<value>`), answers the analyzer protocol with this pack's policies; a virtualenv without python is
refused in one line. The engine-driven run is tests/e2e/test_engine_policy.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2_grpc

from policy.nemotron_policies.pack import PACK_NAME, POLICIES

REPO = Path(__file__).resolve().parents[1]
SHIM = REPO / "tools" / "e2e" / "bin" / "pulumi-analyzer-policy-python"
PACK = REPO / "policy"


def _runtime_options() -> list[str]:
    options = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())["runtime"]["options"]
    return [f"-{key}={value}" for key, value in options.items()]


def _start(*options: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["timeout", "60", str(SHIM), "127.0.0.1:1", ".", *options],
        cwd=PACK,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_shim_serves_the_packs_policies():
    process = _start(*_runtime_options())
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            info = analyzer_pb2_grpc.AnalyzerStub(channel).GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
        assert info.name == PACK_NAME
        assert sorted(p.name for p in info.policies) == sorted(p.name for p in POLICIES)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.parametrize("options", [["-virtualenv=../no-such-venv"], []], ids=["missing-venv", "no-venv-option"])
def test_a_pack_without_its_virtualenv_is_refused_in_one_line(options):
    process = _start("-toolchain=pip", *options)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and "virtualenv" in err, err
