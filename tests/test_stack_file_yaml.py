"""The offline reader of stack files (tools/stack_files.py) hands the program what the pinned Pulumi CLI
hands it: every row of tests/data/pulumi_cli_yaml.json, recorded from the CLI's own loader, is matched
(or refused on purpose, where the row says why), and generated spellings of each kind of scalar resolve
as go-yaml v3 resolves them. Where YAML 1.1 (PyYAML's SafeLoader, the previous reader) differs is listed
per kind: the table of differences."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import numpy
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serving_stack.errors import ConfigError
from tools.mock_runtime import PROJECT_DIR
from tools.stack_files import parse_yaml, stack_file_config

TABLE = json.loads((PROJECT_DIR / "tests" / "data" / "pulumi_cli_yaml.json").read_text())
CASES = {f"{case['group']}: {case['name']}": case for case in TABLE["cases"]}
PROJECT = "nemotron-lightning"
NAME = "Pulumi.case.yaml"


def program_value(value: str) -> Any:
    """A config value as the program reads it (`Config.get_object`, or the string itself)."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def typed(value: Any) -> Any:
    """A value with its type spelled out, so that 2 and 2.0 and True differ."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return (type(value).__name__, value)


def read_here(text: str) -> dict[str, Any]:
    """What the offline reader hands the program, in the table's shape."""
    try:
        config, secure = stack_file_config(parse_yaml(text, NAME), PROJECT, NAME)
    except ConfigError as error:
        return {"error": str(error)}
    return {
        "config": {key: typed(program_value(value)) for key, value in config.items() if key not in secure},
        "secure": sorted(secure),
    }


def as_cli(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "config": {key: typed(program_value(value)) for key, value in result.get("config", {}).items()},
        "secure": sorted(result.get("secure", [])),
    }


@pytest.mark.parametrize("case", list(CASES))
def test_the_reader_hands_the_program_what_the_cli_does(case):
    row = CASES[case]
    here = read_here(row["yaml"])
    if "error" in row["cli"] or "refused_here" in row:
        assert "error" in here, f"the CLI refuses this file ({row['cli'].get('error', row.get('refused_here'))})"
        assert len(here["error"].splitlines()) == 1
    else:
        assert here == as_cli(row["cli"])


DIFFERENT_IN_YAML_1_1 = {
    "booleans": ["yes", "no", "on", "off"],
    "times of day (base 60 in YAML 1.1)": ["22:30", "1:2:3"],
    "integers": ["0o17", "0128", "09"],
    "floats": ["1e5", "+.5", "2.0"],
    "dates and times": ["2024-01-01"],
}


@pytest.mark.parametrize("group", list(DIFFERENT_IN_YAML_1_1))
def test_the_table_of_differences_from_yaml_1_1(group):
    """Each named spelling reaches the program differently under YAML 1.1 (PyYAML's SafeLoader) than under
    the CLI, and the reader follows the CLI."""
    for name in DIFFERENT_IN_YAML_1_1[group]:
        row = CASES[f"{group}: {name}"]
        under_1_1 = yaml.safe_load(row["yaml"])["config"]["nested"][0]
        cli = program_value(row["cli"]["config"][f"{PROJECT}:nested"])[0]
        assert typed(under_1_1) != typed(cli), name
        assert read_here(row["yaml"])["config"][f"{PROJECT}:nested"] == [typed(cli)], name


# --- generated spellings, checked against an oracle derived independently of the reader ---------------

DIGITS = st.text("0123456789", min_size=1, max_size=12)


@st.composite
def integer_spellings(draw):
    """An integer and a spelling go-yaml v3 reads as it: decimal (with a sign and underscores), 0x, 0o,
    0b, and a leading-zero octal."""
    value = draw(st.integers(min_value=0, max_value=2**62))
    form = draw(st.sampled_from(["decimal", "hex", "octal", "binary", "leading zero"]))
    text = {
        "decimal": str(value),
        "hex": f"0x{value:x}",
        "octal": f"0o{value:o}",
        "binary": f"0b{value:b}",
        "leading zero": f"0{value:o}",
    }[form]
    if len(text) > 3 and draw(st.booleans()):
        cut = draw(st.integers(min_value=3 if form != "decimal" else 1, max_value=len(text) - 1))
        text = text[:cut] + "_" + text[cut:]
    sign = draw(st.sampled_from(["", "+", "-"]))
    return (-value if sign == "-" else value), sign + text


def nested_value(text: str) -> Any:
    return read_here(f"config:\n  v: [{text}]\n")["config"][f"{PROJECT}:v"][0]


@given(integer_spellings())
def test_integer_spellings_are_integers(spelled):
    value, text = spelled
    assert nested_value(text) == ("int", value)


@given(st.integers(min_value=0, max_value=99), st.integers(min_value=0, max_value=59), st.booleans())
def test_times_of_day_are_strings(hours, minutes, seconds):
    text = f"{hours}:{minutes:02d}" + (":30" if seconds else "")
    assert nested_value(text) == ("str", text)


OLD_BOOLEANS = ["y", "yes", "n", "no", "on", "off"]


@given(st.sampled_from([*OLD_BOOLEANS, "true", "false"]), st.sampled_from(["lower", "title", "upper"]))
def test_only_true_and_false_are_booleans(word, case):
    text = {"lower": word, "title": word.title(), "upper": word.upper()}[case]
    expected = ("bool", word == "true") if word in ("true", "false") else ("str", text)
    assert nested_value(text) == expected


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e30, max_value=1e30))
def test_integral_floats_reach_the_program_as_integers(number):
    """Go's JSON writes 2.0 as 2 (shortest digits, fixed notation below 1e21): an integer to the program."""
    got = nested_value(repr(number))
    if number.is_integer() and abs(number) < 1e21:
        assert got == ("int", int(numpy.format_float_positional(number, trim="-")))
    else:
        assert got == ("float", number)


# --- the reader against the CLI's loader itself, where the probe builds offline -----------------------

PROBE = PROJECT_DIR / "tools" / "e2e" / "gomod" / "stack-config-probe"


@cache
def probe_binary(scratch: str) -> Path | None:
    if shutil.which("go") is None:
        return None
    binary = Path(scratch) / "stack-config-probe"
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off"}
    built = subprocess.run(["go", "build", "-o", str(binary), "."], cwd=PROBE, env=env, capture_output=True)
    return binary if built.returncode == 0 else None


SCALAR_PIECES = [*"0123456789", *"+-._:eExXoObB", "0x", "0o", "0b", "2024-", "01-", "29", "T10:00:00", "Z", "+02:00"]


@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(st.sampled_from(SCALAR_PIECES), min_size=1, max_size=5).map("".join), min_size=500))
def test_generated_scalars_match_the_cli_loader(tmp_path_factory, scalars):
    """Hundreds of generated scalars in one run of the probe (the SDK's loader); skipped where Go or the
    module cache is missing."""
    binary = probe_binary(str(tmp_path_factory.getbasetemp()))
    if binary is None:
        pytest.skip("the stack-config probe does not build offline here")
    texts = [f"config:\n  v: [{s}]\n  t: {s}\n" for s in scalars if not s.endswith(":")]
    run = subprocess.run(
        [str(binary)], input=json.dumps(texts), capture_output=True, text=True, check=True, env={"TZ": "UTC"}
    )
    mismatches = []
    for text, cli in zip(texts, json.loads(run.stdout), strict=True):
        here = read_here(text)
        if ("error" in cli) != ("error" in here) or ("error" not in cli and here != as_cli(cli)):
            mismatches.append((text, cli, here))
    assert not mismatches, mismatches[:3]
