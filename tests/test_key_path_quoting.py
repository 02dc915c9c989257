"""A key path is one word however odd the keys a hand edit adds: keys with whitespace or control characters
are quoted with escapes (the fuzzer found `kubernetes.0\r0` printed as `kubernetes.0 0`), plain keys stay."""

from __future__ import annotations

import pytest

from serving_stack.errors import key_path


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (["kubernetes", "namespace"], "kubernetes.namespace"),
        (["targets", 0, "replicas", "VllmDecodeWorker"], "targets[0].replicas.VllmDecodeWorker"),
        (["kubernetes", "0\r0"], "kubernetes.'0\\r0'"),
        (["gateway", "max replicas"], "gateway.'max\\x20replicas'"),
        (["gateway", "\u00e9t\u00e9"], "gateway.\u00e9t\u00e9"),
        (["", "x"], "''.x"),
    ],
)
def test_key_paths_are_one_word(parts, expected):
    path = key_path(parts)
    assert path == expected
    assert not any(c.isspace() for c in path)
