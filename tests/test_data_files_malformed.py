"""Each kind of data file the facts loaders read, broken in each way a hand edit or a bad absorb breaks one,
stops the load with one bounded `ConfigError` line naming the file: never a traceback, never a silent pass.

The files are not listed by hand: `load_facts` runs once on a copy of catalog/ while the reader records
each file opened and the loader (as `load_facts` calls it) that opened it. Each kind of break is tried once
per kind of file (its loader, and for the recipes the manifest family): the 30 recipe manifests share one
loader and one schema, so one of them stands for all. Each case breaks one file in a copy, reruns only that
loader in-process (caches cleared) and restores the file. One subprocess test checks the render's exit code
and its one stderr line.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import serving_stack.facts as facts_package
from serving_stack.errors import MAX_LINE, ConfigError
from serving_stack.facts import load_facts, strict_files
from serving_stack.facts.aws import load_aws_catalog, load_aws_regions, load_capacity_prices
from serving_stack.facts.catalog import load_catalog, load_checkpoint_sizes
from serving_stack.facts.sagemaker import SnapshotSpecSource, resolve_jumpstart_model
from serving_stack.facts.strict_files import CATALOG_DIR_ENV, PROJECT_DATA_DIR
from tools import render

ROOT = Path(__file__).resolve().parent.parent
Reader = tuple[Callable[..., Any], str]  # a loader and its argument relative to the data root


def _cached_loaders() -> list[Any]:
    modules = [
        importlib.import_module(f"serving_stack.facts.{m.name}") for m in pkgutil.iter_modules(facts_package.__path__)
    ]
    return [obj for module in modules for obj in vars(module).values() if hasattr(obj, "cache_clear")]


CACHED = _cached_loaders()


def _clear_caches() -> None:
    for loader in CACHED:
        loader.cache_clear()


def _record_readers(root: Path) -> dict[str, list[Reader]]:
    """Run `load_facts(root)` and note, for every file read, the loader `load_facts` called that read it."""
    readers: dict[str, list[Reader]] = {}
    original = strict_files.read_bytes

    def recording(path: Path, key: str, name: str) -> bytes:
        frame = sys._getframe(1)
        while frame.f_back is not None and frame.f_back.f_code is not load_facts.__code__:
            frame = frame.f_back
        loader = frame.f_globals[frame.f_code.co_name]
        argument = Path(frame.f_locals[frame.f_code.co_varnames[0]]).relative_to(root).as_posix()
        entries = readers.setdefault(path.relative_to(root).as_posix(), [])
        if (loader, argument) not in entries:
            entries.append((loader, argument))
        return original(path, key, name)

    strict_files.read_bytes = recording
    try:
        _clear_caches()
        load_facts(root)
    finally:
        strict_files.read_bytes = original
        _clear_caches()
    return readers


def _readers() -> dict[str, list[Reader]]:
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch).resolve() / "catalog"
        shutil.copytree(PROJECT_DATA_DIR, copy)
        return _record_readers(copy)


READERS = _readers()
DATA_FILES = sorted(READERS)


def _kind(relative: str) -> tuple[tuple[str, ...], str]:
    """Files read by the same loaders with the same schema: the recipes' DGD manifests, their model-cache
    manifests, the dashboards, or one file."""
    parts = Path(relative).parts
    if parts[0] == "recipes":
        return tuple(loader.__name__ for loader, _ in READERS[relative]), parts[1] if parts[
            1
        ] == "model-cache" else "dgd"
    family = parts[0]
    return tuple(loader.__name__ for loader, _ in READERS[relative]), family


# One file of each kind (the first by name) stands for its kind.
ONE_OF_EACH_KIND = sorted({_kind(f): f for f in reversed(DATA_FILES)}.values())


# --- the malformations: text -> text ---------------------------------------------------------------------


def _documents(text: str) -> list[Any]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _map_leaves(value: Any, change: Callable[[Any], Any], key: Any = None) -> Any:
    if isinstance(value, dict):
        return {k: _map_leaves(v, change, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_leaves(v, change, key) for v in value]
    return value if key in ("kind", "apiVersion") else change(value)


def _wrong_type(value: Any) -> Any:
    """A number where text goes, text where a number goes."""
    if isinstance(value, bool):
        return "maybe"
    if isinstance(value, (int, float)):
        return "eight"
    return 8 if isinstance(value, str) else value


def _duplicate_key(text: str) -> str:
    last = _documents(text)[-1]
    return text.rstrip("\n") + f"\n{next(iter(last))}: duplicate\n"


def _required_missing(text: str) -> str:
    stripped = [{"kind": d["kind"]} if "kind" in d else {} for d in _documents(text)]
    return yaml.safe_dump_all(stripped)


def _not_finite(text: str) -> str:
    found = [False]

    def nan(value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            found[0] = True
            return float("nan")
        return value

    documents = [_map_leaves(d, nan) for d in _documents(text)]
    if not found[0]:
        return text.rstrip("\n") + "\nnotANumber: .nan\n"
    return yaml.safe_dump_all(documents)


def _alias_bomb(text: str) -> str:
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    return "\n".join(rows) + "\n" + text


MUTATIONS: dict[str, Callable[[str], str]] = {
    "empty file": lambda text: "",
    "top-level list": lambda text: "- a\n- b\n",
    "not UTF-8": lambda text: "# \udcff\n" + text,  # written back as the byte 0xff
    "not YAML": lambda text: text + "\nbroken: [unclosed\n",
    "duplicate key": _duplicate_key,
    "required keys missing": _required_missing,
    "values of the wrong type": lambda text: yaml.safe_dump_all(
        [_map_leaves(d, _wrong_type) for d in _documents(text)]
    ),
    "a number that is not finite": _not_finite,
    "alias bomb": _alias_bomb,
    "deep nesting": lambda text: "deep: " + "[" * 100 + "]" * 100 + "\n" + text,
}


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One copy of catalog/ for the module. The files a case leaves intact parse as before, so their
    documents are remembered by text (the catalog reads 30 recipes for any one broken file); a broken
    file's text is new and goes through the real reader."""
    root = tmp_path_factory.mktemp("data").resolve() / "catalog"
    shutil.copytree(PROJECT_DATA_DIR, root)
    parse = strict_files.parse_yaml
    remembered: dict[tuple[str, str, str], list[Any]] = {}

    def parse_once(text: str, key: str, name: str, *, plain_scalars: Any = None) -> list[Any]:
        if (text, key, name) not in remembered:
            remembered[text, key, name] = parse(text, key, name, plain_scalars=plain_scalars)
        return remembered[text, key, name]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(strict_files, "parse_yaml", parse_once)
        yield root
    _clear_caches()


def _run_readers(root: Path, relative: str) -> None:
    for loader, argument in READERS[relative]:
        loader(root / argument)


def _load_raises(root: Path, relative: str, text: str) -> str:
    """Write `text` over one data file, rerun the loaders that read it; the one error line they raise."""
    path = root / relative
    original = path.read_bytes()
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    try:
        _clear_caches()
        with pytest.raises(ConfigError) as raised:
            _run_readers(root, relative)
        return str(raised.value)
    finally:
        path.write_bytes(original)
        _clear_caches()


def _assert_one_line_naming(line: str, relative: str) -> None:
    assert "\n" not in line and len(line) <= MAX_LINE, line
    assert relative in line, f"the error does not name {relative}: {line}"


def test_the_loaders_read_every_kind_of_data_file():
    """The recorded list is what `load_facts` reads: the top-level files, the dashboards and the recipes."""
    assert {"targets.yaml", "gpus.yaml", "gateway.yaml", "durations.yaml"} <= set(DATA_FILES)
    assert any(f.startswith("dashboards/") for f in DATA_FILES)
    assert sum(f.startswith("recipes/") for f in DATA_FILES) >= 3
    assert all(READERS[f] for f in DATA_FILES)


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@pytest.mark.parametrize("relative", ONE_OF_EACH_KIND)
def test_a_malformed_data_file_is_one_line_naming_it(data_root, relative, mutation):
    text = (data_root / relative).read_text()
    line = _load_raises(data_root, relative, MUTATIONS[mutation](text))
    _assert_one_line_naming(line, relative)


# --- the probe's cases, by name -----------------------------------------------------------------------------


def _edited(root: Path, relative: str, old: str, new: str) -> str:
    text = (root / relative).read_text()
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    "manifest",
    [
        "recipes/../../outside.yaml",
        "/etc/hostname",
        "recipes/vllm",
        "recipes/vllm/nope.yaml",
    ],
)
def test_a_manifest_path_stays_inside_catalog(data_root, manifest):
    first = load_catalog(PROJECT_DATA_DIR).data.targets[0].manifest
    line = _load_raises(
        data_root, "targets.yaml", _edited(data_root, "targets.yaml", f"manifest: {first}", f"manifest: {manifest}")
    )
    assert line.startswith("catalog/targets.yaml: targets[0].manifest: "), line


def test_a_model_cache_path_stays_inside_catalog(data_root):
    claim = load_catalog(PROJECT_DATA_DIR).data.modelCache.claim
    text = _edited(data_root, "targets.yaml", f"claim: {claim}", "claim: ../../etc/passwd")
    line = _load_raises(data_root, "targets.yaml", text)
    assert line.startswith("catalog/targets.yaml: modelCache.claim: '../../etc/passwd' leads out of catalog/"), line


def test_a_manifest_document_that_is_not_a_mapping(data_root):
    relative = load_catalog(PROJECT_DATA_DIR).data.targets[0].manifest
    text = (data_root / relative).read_text() + "\n---\njust a string\n"
    line = _load_raises(data_root, relative, text)
    assert f"catalog/{relative} document 3 is a str, not a mapping" in line, line


@pytest.mark.parametrize(
    ("relative", "change", "expected"),
    [
        ("aws_regions.yaml", ("Querétaro", "Quer\udce9taro"), "catalog/aws_regions.yaml: is not UTF-8 text (byte "),
        ("checkpoints.yaml", None, "catalog/checkpoints.yaml: is not valid YAML (line "),
        ("capacity_prices.yaml", ("usdPerHour: ", "usdPerHour: .nan #"), "is not a finite number"),
        ("capacity_prices.yaml", ("usdPerHour: ", "usdPerHour: 'nan' #"), "Input should be a finite number"),
        ("instance_types.yaml", ("gpus: 8", "gpus: eight"), "catalog/instance_types.yaml: instanceTypes."),
    ],
)
def test_the_probes_data_cases(data_root, relative, change, expected):
    text = (data_root / relative).read_text()
    text = text + "\nschemaVersion: 1\n" if change is None else _edited(data_root, relative, *change)
    line = _load_raises(data_root, relative, text)
    assert line.startswith(f"catalog/{relative}") and expected in line, line
    if change is None:
        assert "duplicate key 'schemaVersion'" in line


def test_the_probed_loaders_are_among_the_recorded_ones():
    recorded = {loader for readers in READERS.values() for loader, _ in readers}
    assert {load_aws_catalog, load_checkpoint_sizes, load_capacity_prices, load_catalog} <= recorded
    assert callable(load_aws_regions)


# --- JumpStart snapshot (read when a SageMaker endpoint uses source: jumpstart) -----------------------------

SNAPSHOT = PROJECT_DATA_DIR / "jumpstart"
MANIFEST = json.loads((SNAPSHOT / "models_manifest.json").read_text())[0]
JSON_MUTATIONS: dict[str, Callable[[str], str]] = {
    "empty file": lambda text: "",
    "not JSON": lambda text: text[: len(text) // 2],
    "not UTF-8": lambda text: "\udcff" + text,
    "duplicate key": lambda text: text.replace("{", '{"version": "0", ', 1),
    "NaN": lambda text: text.replace("{", '{"x": NaN, ', 1),
    "a number too large": lambda text: text.replace("{", '{"x": 1e999, ', 1),
    "wrong top level": lambda text: '"a string"',
    "required keys missing": lambda text: "[{}]" if text.lstrip().startswith("[") else "{}",
    "values of the wrong type": lambda text: json.dumps(_map_leaves(json.loads(text), _wrong_type)),
    "deep nesting": lambda text: "[" * 100_000 + "]" * 100_000,
}


@pytest.mark.parametrize("mutation", sorted(JSON_MUTATIONS))
@pytest.mark.parametrize("relative", ["models_manifest.json", MANIFEST["spec_key"]])
def test_a_malformed_jumpstart_snapshot_file_is_one_line(tmp_path, relative, mutation):
    snapshot = tmp_path / "jumpstart"
    shutil.copytree(SNAPSHOT, snapshot)
    path = snapshot / relative
    path.write_bytes(JSON_MUTATIONS[mutation](path.read_text()).encode("utf-8", "surrogateescape"))
    with pytest.raises(ConfigError) as raised:
        _resolve_from(snapshot)
    line = str(raised.value)
    assert "\n" not in line and len(line) <= MAX_LINE, line
    assert Path(relative).name in line or "jumpstart" in line, line


def _resolve_from(snapshot: Path) -> None:
    resolve_jumpstart_model(
        MANIFEST["model_id"],
        MANIFEST["version"],
        "us-east-1",
        "ml.p5.48xlarge",
        accept_eula=True,
        source=SnapshotSpecSource(snapshot),
        allow_unverified=True,
    )


def test_a_spec_key_stays_inside_the_snapshot(tmp_path):
    snapshot = tmp_path / "jumpstart"
    shutil.copytree(SNAPSHOT, snapshot)
    manifest = snapshot / "models_manifest.json"
    manifest.write_text(manifest.read_text().replace(MANIFEST["spec_key"], "../../../etc/hostname"))
    with pytest.raises(ConfigError, match="leads out of the snapshot directory"):
        _resolve_from(snapshot)


# --- the render: exit 2 and one line, for a bad data file and a bad --out -------------------------------------


def test_the_render_exits_2_with_one_line_for_a_bad_data_file(tmp_path):
    catalog = tmp_path / "catalog"
    shutil.copytree(PROJECT_DATA_DIR, catalog)
    first = load_catalog(PROJECT_DATA_DIR).data.targets[0].manifest
    targets = catalog / "targets.yaml"
    targets.write_text(targets.read_text().replace(f"manifest: {first}", "manifest: ../../../../etc/hostname", 1))
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "tools.render", "--stack", "dev", "--secret-placeholders", "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, CATALOG_DIR_ENV: str(catalog)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert lines[0].startswith("error: catalog/targets.yaml: targets[0].manifest: '../../../../etc/hostname' leads out")
    assert not (out / "dev").exists()


@pytest.mark.parametrize("where", ["a file", "below a file"])
def test_an_out_path_that_is_a_file_is_one_line(tmp_path, capsys, where):
    a_file = tmp_path / "taken"
    a_file.write_text("not a directory\n")
    out = a_file if where == "a file" else a_file / "deeper"
    assert render.main(["--stack", "dev", "--out", str(out)]) == render.EXIT_CONFIG
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"error: --out: {a_file} is a file, not a directory"]
    assert a_file.read_text() == "not a directory\n"


def test_an_out_path_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    def full_disk(run: Any, stack: str, out_dir: Path, records: Any = None) -> None:
        (out_dir / "manifests").mkdir(parents=True)
        raise OSError(28, "No space left on device", str(out_dir / "manifests" / "x.yaml"))

    monkeypatch.setattr(render, "write_render", full_disk)
    with pytest.raises(ConfigError) as raised:
        render._write_out(None, "dev", tmp_path / "dev", [])  # type: ignore[arg-type]
    assert str(raised.value).startswith("--out: cannot write /") and str(raised.value).endswith(
        ": No space left on device"
    )
    assert not (tmp_path / "dev").exists()
