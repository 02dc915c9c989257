"""The pack config (`--policy-pack-config`, the render's and the runner's `--policy-config`) is validated as a
whole against each policy's config schema before anything runs: an unknown policy or property, a bad
enforcement level, an entry that is neither a level nor an object, or a property of the wrong type is refused
naming its key (the render: exit 2, one line, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policy.nemotron_policies.cli import main as run_policy
from policy.nemotron_policies.pack_config import PackConfigError, validate_pack_config
from tools.render import main as render

BAD_CONFIGS = [
    ({"image-pin": "advisory"}, "pack config names unknown policies ['image-pin']"),
    ({"image-pinning": "warn"}, "image-pinning.enforcementLevel: 'warn' is not one of advisory, mandatory"),
    ({"all": {"enforcementLevel": "strict"}}, "all.enforcementLevel: 'strict' is not one of"),
    ({"all": {"enforcementLevel": "advisory", "allowedRegistries": []}}, "all: unknown config properties"),
    ({"least-privilege": 7}, "least-privilege: 7 is neither an enforcement level"),
    ({"least-privilege": ["advisory"]}, "least-privilege: ['advisory'] is neither an enforcement level"),
    ({"image-pinning": {"allowedRegistry": []}}, "image-pinning: unknown config properties ['allowedRegistry']"),
    (
        {"image-pinning": {"allowedRegistries": "nvcr.io"}},
        "image-pinning.allowedRegistries: 'nvcr.io' is not of type 'array'",
    ),
    (
        {"image-pinning": {"allowedRegistries": ["nvcr.io", 3]}},
        "image-pinning.allowedRegistries[1]: 3 is not of type 'string'",
    ),
    ({"least-privilege": {"allowedHostPaths": None}}, "least-privilege.allowedHostPaths: None is not of type 'array'"),
    (
        {"data-protection": {"protectedStacks": {"prod": True}}},
        "data-protection.protectedStacks: {'prod': True} is not of type",
    ),
]
GOOD_CONFIGS = [
    None,
    {},
    {"all": "advisory"},
    {"all": {"enforcementLevel": "mandatory"}, "resource-requests": None},
    {"image-pinning": {"enforcementLevel": "advisory", "allowedRegistries": ["nvcr.io"]}},
    {
        "least-privilege": {
            "allowedHostPaths": ["/var/lib/nemotron-prewarm", "/var/log:ro"],
            "clusterAdminPrincipals": [],
        }
    },
]


@pytest.mark.parametrize(("config", "error"), BAD_CONFIGS, ids=[str(c) for c, _ in BAD_CONFIGS])
def test_a_bad_pack_config_is_refused_naming_its_key(config, error):
    with pytest.raises(PackConfigError) as raised:
        validate_pack_config(config)
    assert str(raised.value).startswith(error), str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("config", GOOD_CONFIGS)
def test_a_good_pack_config_passes(config):
    validate_pack_config(config)


def test_a_long_bad_value_is_quoted_briefly():
    with pytest.raises(PackConfigError) as raised:
        validate_pack_config({"image-pinning": {"allowedRegistries": "x" * 5000}})
    assert len(str(raised.value)) < 300


@pytest.mark.parametrize(("config", "error"), [BAD_CONFIGS[4], BAD_CONFIGS[7]])
def test_the_render_refuses_a_bad_policy_config_before_rendering(tmp_path: Path, capsys, config, error):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "build"
    status = render(["--stack", "dev", "--out", str(out), "--policy-config", str(path), "--secret-placeholders"])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert line.startswith(f"error: --policy-config: {error}")
    assert not (out / "dev").exists()


def test_the_runner_refuses_a_non_object_entry_with_one_line(tmp_path: Path, capsys):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"least-privilege": 7}))
    assert run_policy(["--stack", "dev", "--policy-config", str(path), str(tmp_path / "missing.json")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: ")
