"""The canary exposes probe success and latency that Prometheus can parse, and turns failures into metrics; what it
exports is exactly the `canary` group of catalog/metrics.yaml (names, types, labels), which the rules and
dashboards read."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from ops_fake_openai import Behaviour, FakeOpenAIServer, Faults
from prometheus_client.parser import text_string_to_metric_families

from serving_stack.facts.catalog import load_catalog
from serving_stack.facts.monitoring import load_metrics

PROGRAM = Path(__file__).resolve().parents[1] / "ops" / "canary.py"
RECIPE = next(iter(load_catalog().recipes.values()))
CANARY = load_metrics().groups["canary"].metrics
SUCCESS, DURATION = CANARY["probeSuccess"].name, CANARY["probeDuration"].name
PROBES, LAST_PROBE = CANARY["probes"].name, CANARY["lastProbeTimestamp"].name
REQUESTS = CANARY["requestDuration"].name


@contextmanager
def canary(base_url: str, *extra: str) -> Iterator[str]:
    """A running canary; yields its metrics URL."""
    process = subprocess.Popen(
        [
            sys.executable,
            str(PROGRAM),
            "--base-url",
            base_url,
            "--model",
            RECIPE.served_model_name,
            "--target",
            RECIPE.id,
            "--port",
            "0",
            *extra,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        first = process.stdout.readline()
        assert first.startswith("metrics on :"), first
        yield f"http://127.0.0.1:{first.split(':')[1].split('/')[0]}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def exposition(url: str) -> str:
    with urllib.request.urlopen(url + "/metrics", timeout=5) as response:
        return response.read().decode()


def samples(url: str) -> dict[tuple[str, str], float]:
    """(sample name, result label or le) -> value, parsed by the Prometheus client's own parser."""
    parsed = {}
    for family in text_string_to_metric_families(exposition(url)):
        for sample in family.samples:
            assert sample.labels["target"] == RECIPE.id and sample.labels["model"] == RECIPE.served_model_name
            parsed[(sample.name, sample.labels.get("result") or sample.labels.get("le") or "")] = sample.value
    return parsed


def wait_for(url: str, condition, seconds: float = 20.0) -> dict[tuple[str, str], float]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        current = samples(url)
        if condition(current):
            return current
        time.sleep(0.1)
    raise AssertionError(f"condition not met within {seconds}s: {current}")


def test_successful_probes_report_success_and_latency():
    with (
        FakeOpenAIServer(Behaviour(model=RECIPE.served_model_name)) as server,
        canary(server.base_url, "--interval", "0.2") as url,
    ):
        metrics = wait_for(url, lambda m: m.get((PROBES, "success"), 0) >= 3)
    assert metrics[(SUCCESS, "")] == 1
    assert metrics[(PROBES, "failure")] == 0
    assert 0 < metrics[(DURATION, "")] < 5
    count = metrics[(f"{REQUESTS}_count", "")]
    assert metrics[(f"{REQUESTS}_bucket", "+Inf")] == count >= 3
    assert abs(metrics[(LAST_PROBE, "")] - time.time()) < 10


def test_failing_and_hanging_endpoints_become_failed_probes():
    behaviour = Behaviour(model=RECIPE.served_model_name, faults=Faults(chat_status=500))
    with FakeOpenAIServer(behaviour) as server, canary(server.base_url, "--interval", "0.2", "--timeout", "0.3") as url:
        failed = wait_for(url, lambda m: m.get((PROBES, "failure"), 0) >= 2)
        assert failed[(SUCCESS, "")] == 0
        assert failed[(f"{REQUESTS}_count", "")] == 0
        behaviour.faults = Faults()  # the endpoint recovers
        recovered = wait_for(url, lambda m: m.get((SUCCESS, "")) == 1)
        behaviour.faults = Faults(chat_delay_seconds=2)  # and then hangs
        hung = wait_for(url, lambda m: m[(PROBES, "failure")] > recovered[(PROBES, "failure")])
    assert hung[(SUCCESS, "")] == 0
    assert hung[(DURATION, "")] < 2


def test_no_success_sample_before_the_first_probe_and_a_dripping_server_is_cut_at_the_timeout():
    behaviour = Behaviour(model=RECIPE.served_model_name, faults=Faults(drip_seconds=0.05))
    with FakeOpenAIServer(behaviour) as server, canary(server.base_url, "--interval", "0.1", "--timeout", "1") as url:
        assert (SUCCESS, "") not in samples(url)  # absent, not a false 0
        failed = wait_for(url, lambda m: m.get((PROBES, "failure"), 0) >= 1)
    assert failed[(SUCCESS, "")] == 0
    assert 1 <= failed[(DURATION, "")] < 1.5


@pytest.mark.parametrize("arguments", [["--interval", "0"], ["--timeout", "-1"]])
def test_bad_arguments_exit_2(arguments):
    run = subprocess.run(
        [sys.executable, str(PROGRAM), "--base-url", "http://x/v1", "--model", "m", "--target", "t", *arguments],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 2


def test_unknown_paths_are_404():
    with (
        FakeOpenAIServer(Behaviour(model=RECIPE.served_model_name)) as server,
        canary(server.base_url) as url,
        pytest.raises(urllib.error.HTTPError) as error,
    ):
        urllib.request.urlopen(url + "/other", timeout=5)
    assert error.value.code == 404


def test_the_exported_metrics_are_the_canary_group_of_the_data_file():
    """Names, types and labels both ways: a metric the program renames or drops, or one the data file invents,
    fails here before a rule or panel reads a series that never exists."""
    with (
        FakeOpenAIServer(Behaviour(model=RECIPE.served_model_name)) as server,
        canary(server.base_url, "--interval", "0.2") as url,
    ):
        wait_for(url, lambda m: (SUCCESS, "") in m)
        families = list(text_string_to_metric_families(exposition(url)))
    exported = {f.name: (f.type, {k for s in f.samples for k in s.labels} - {"le"}) for f in families}
    # the parser names a counter's family without its _total suffix
    listed = {
        m.name.removesuffix("_total") if m.type == "counter" else m.name: (m.type, set(m.labels))
        for m in CANARY.values()
    }
    assert exported == listed
