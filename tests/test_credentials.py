"""The product's credential check (`serving_stack/credentials.py`, reading `catalog/credentials.yaml`) and the
policy pack's own (`policy/nemotron_policies/credentials.py`, deployed alone) are one table: the same names and
shapes, and the same verdict on every name and value of the stack files, the catalog and the pack's samples."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from itertools import product
from typing import Any

import pytest
import yaml
from test_policy_secret_shapes import SAMPLES

from policy.nemotron_policies import credentials as pack
from serving_stack import credentials
from tools.mock_runtime import PROJECT_DIR


def differences(table: dict[str, Any]) -> list[str]:
    """Where a credentials table differs from the pack's module."""
    names = table["names"]
    wanted = {
        "words": pack.CREDENTIAL_WORDS,
        "keyQualifiers": pack.KEY_QUALIFIERS,
        "referenceSuffixes": pack.REFERENCE_SUFFIXES,
        "notCredentialPrefixes": pack.NOT_A_CREDENTIAL_PREFIXES,
    }
    found = [f"names.{key}" for key, words in wanted.items() if frozenset(names[key]) != words]
    if [(s["kind"], s["pattern"]) for s in table["shapes"]] != [(k, p.pattern) for k, p in pack.SHAPES]:
        found.append("shapes")
    return found


def test_the_table_is_the_packs() -> None:
    assert differences(credentials.TABLE) == []


@pytest.mark.parametrize(
    "plant",
    [
        lambda t: t["names"]["words"].remove("TOKEN"),
        lambda t: t["names"]["referenceSuffixes"].append("SALT"),
        lambda t: t["shapes"][0].update(pattern=t["shapes"][0]["pattern"] + "x"),
        lambda t: t["shapes"].reverse(),
    ],
)
def test_a_planted_difference_is_found(plant) -> None:
    table = copy.deepcopy(credentials.TABLE)
    plant(table)
    assert differences(table)


def _strings(value: Any) -> Iterator[tuple[str, bool]]:
    """(text, is a key) for every key and string at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key), True
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value, False


def _corpus() -> tuple[set[str], set[str]]:
    files = [*PROJECT_DIR.glob("Pulumi.*.yaml"), *PROJECT_DIR.glob("catalog/*.yaml")]
    found = [pair for path in files for doc in yaml.safe_load_all(path.read_text()) for pair in _strings(doc)]
    table = credentials.TABLE["names"]
    words = [w for key in ("words", "keyQualifiers", "referenceSuffixes", "notCredentialPrefixes") for w in table[key]]
    words += ["KEY", "VALUE"]
    names = {text for text, is_key in found if is_key}
    for first, second in product(words, repeat=2):
        names |= {f"{first}_{second}", f"{first.lower()}{second.title()}", f"--{first.lower()}-{second.lower()}"}
    values = {text for text, is_key in found if not is_key} | set(SAMPLES.values())
    values |= {f"prefix {sample} suffix" for sample in SAMPLES.values()}
    values |= {json.dumps({"auths": {"nvcr.io": {key: "x"}}}) for key in ("auth", "password", "username", "email")}
    return names, values


NAMES, VALUES = _corpus()


def test_the_corpus_holds_credentials_and_not() -> None:
    assert any(pack.credential_name(n) for n in NAMES) and not all(pack.credential_name(n) for n in NAMES)
    assert any(pack.shapes(v) for v in VALUES) and not all(list(pack.shapes(v)) for v in VALUES)


def test_the_same_names_are_credential_names() -> None:
    assert [n for n in sorted(NAMES) if credentials.credential_name(n) != pack.credential_name(n)] == []


def test_the_same_values_have_the_same_shapes() -> None:
    assert [v for v in sorted(VALUES) if credentials.shapes(v) != list(pack.shapes(v))] == []
    assert [v for v in sorted(VALUES) if credentials.literal(v) != pack.literal(v)] == []
