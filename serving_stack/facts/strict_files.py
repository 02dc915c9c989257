"""The one strict reader of the project's YAML and JSON files (data files, manifests, stack files): a malformed
file is one bounded `ConfigError` line naming the file (and the key or line), never a traceback.

A file is UTF-8 of at most MAX_FILE_BYTES. YAML goes through libyaml, refusing duplicate keys, merge keys (`<<`),
keys that are not strings, nesting deeper than MAX_DEPTH (libyaml's composer recurses per level), more than
MAX_NODES values once aliases are expanded, and numbers that are not finite; JSON gets the same checks. Stack
files (`plain_scalars=`, `tools/stack_files.py`) resolve every plain scalar by the Pulumi CLI's rules
(`tools/cli_yaml.py`), and leave non-string keys and non-finite numbers to the config reader, which names
them by their config key path.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, Optional, TypeVar

import pydantic
import yaml

from serving_stack.errors import ConfigError, bounded, from_validation_error, key_path, walk

MAX_FILE_BYTES = 1_000_000  # the largest data file is about 12 kB
MAX_NODES = 100_000  # values after alias expansion, per file; a recipe manifest holds about 450
MAX_DEPTH = 64  # nesting levels; a DynamoGraphDeployment nests about 14 deep
MERGE_TAG = "tag:yaml.org,2002:merge"
YAML_KINDS = {bool: "a boolean (yes, no, on, off, true, false)", int: "a number", float: "a number", type(None): "null"}


def _key_error(key_node: yaml.Node, problem: str) -> NoReturn:
    raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)


class _StrictLoader(yaml.CSafeLoader):  # libyaml's parser, PyYAML's safe constructor
    """Refuses duplicate keys, merge keys and keys that are not strings while constructing each mapping."""

    string_keys = True

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            refuse = functools.partial(_key_error, key_node)
            if key_node.tag == MERGE_TAG:
                refuse("merge keys (<<) are not supported: repeat the values instead")
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (list, dict)):
                refuse("a mapping key is not a scalar")
            if self.string_keys and not isinstance(key, str):
                kind = YAML_KINDS.get(type(key), f"a {type(key).__name__}")
                refuse(f"YAML reads the key {bounded(key)} as {kind}, not a string (quote it)")
            if key in seen:
                refuse(f"duplicate key {bounded(key)}")
            seen.add(key)
        return dict(super().construct_mapping(node, deep=deep))


PLAIN_TAG = "tag:nemotron,2026:plain"  # a stack file's unquoted scalars, resolved by the caller's rules
PlainScalars = Callable[[str], Any]


@functools.cache
def _stack_file_loader(plain_scalars: PlainScalars) -> type[_StrictLoader]:
    """As the Pulumi CLI reads a stack file: every plain scalar resolved by `plain_scalars` (no YAML 1.1
    resolvers), and non-string scalar keys kept for the config reader (module docstring)."""

    class _StackFileLoader(_StrictLoader):
        string_keys = False

    loader = _StackFileLoader
    loader.yaml_implicit_resolvers = {
        "<": [(MERGE_TAG, re.compile(r"^(?:<<)$"))],
        None: [(PLAIN_TAG, re.compile(""))],  # PyYAML tries the first-character resolvers, then these
    }
    loader.add_constructor(PLAIN_TAG, lambda _loader, node: plain_scalars(node.value))
    return loader


def _refuse(key: str, name: str, problem: str) -> NoReturn:
    """`key: <file> problem`, the file left out where the key is the file itself."""
    raise ConfigError(key, problem if key == name else f"{name} {problem}")


def read_bytes(path: Path, key: str, name: str) -> bytes:
    """A data file's bytes: it exists, is a file and is at most MAX_FILE_BYTES."""
    if not path.is_file():
        raise ConfigError(key, f"file {path.name} does not exist" + ("" if key == name else f" ({name})"))
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            _refuse(key, name, f"is {size} bytes; a data file is at most {MAX_FILE_BYTES}")
        return path.read_bytes()
    except OSError as error:
        _refuse(key, name, f"cannot be read ({bounded(error.strerror or str(error), quote=False)})")


def read_text(path: Path, key: str, name: str) -> str:
    body = read_bytes(path, key, name)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        _refuse(key, name, f"is not UTF-8 text (byte {error.start}: {bounded(body[error.start : error.start + 1])})")


def _check_depth(text: str, key: str, name: str) -> None:
    """Nesting from libyaml's event stream (its parser keeps an explicit stack), before anything recurses."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.CSafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark else "?"
                _refuse(key, name, f"nests deeper than {MAX_DEPTH} levels (line {line})")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def check_values(document: Any, key: str, name: str, *, finite: bool = True) -> None:
    """The document as a program sees it (aliases expanded): at most MAX_NODES values and MAX_DEPTH levels (a
    recursive alias is infinitely deep), every number finite unless `finite` is off (a stack file's)."""
    for count, (path, value) in enumerate(walk(document), 1):
        if count > MAX_NODES:
            _refuse(key, name, f"expands to more than {MAX_NODES} values (YAML aliases?)")
        if len(path) > MAX_DEPTH:
            _refuse(key, name, f"nests deeper than {MAX_DEPTH} levels (a recursive YAML alias?)")
        if finite and isinstance(value, float) and not math.isfinite(value):
            problem = f"{key_path(path) or 'the document'}: {value} is not a finite number"
            raise ConfigError(key, problem if key == name else f"{name}: {problem}")


def parse_yaml(text: str, key: str, name: str, *, plain_scalars: Optional[PlainScalars] = None) -> list[Any]:
    """Every YAML document of `text` (an empty one as None), checked; errors start with `key`."""
    try:
        _check_depth(text, key, name)
        documents = list(
            yaml.load_all(text, Loader=_StrictLoader if plain_scalars is None else _stack_file_loader(plain_scalars))
        )
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        _refuse(key, name, f"is not valid YAML{where}: {bounded(problem, quote=False)}")
    except (ValueError, OverflowError, RecursionError) as error:  # a scalar PyYAML cannot construct (2024-13-45)
        _refuse(key, name, f"is not valid YAML: {bounded(str(error), quote=False)}")
    for document in documents:
        check_values(document, key, name, finite=plain_scalars is None)
    return documents


def load_yaml_documents(
    path: Path, key: str, name: str | None = None, *, plain_scalars: Optional[PlainScalars] = None
) -> list[Any]:
    """`parse_yaml` of a file; `name` (the file as messages name it, default `key`) follows `key` if it differs."""
    name = name or key
    return parse_yaml(read_text(path, key, name), key, name, plain_scalars=plain_scalars)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for item_key, value in pairs:
        if item_key in result:
            raise ValueError(f"duplicate key {bounded(item_key)}")
        result[item_key] = value
    return result


def _no_constant(constant: str) -> NoReturn:
    raise ValueError(f"{constant} is not a finite number")


def parse_json(text: str | bytes, key: str, name: str) -> Any:
    """One JSON document, checked as YAML files are; errors start with `key`."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        document = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except UnicodeDecodeError as error:
        _refuse(key, name, f"is not UTF-8 text (byte {error.start})")
    except (ValueError, RecursionError) as error:
        _refuse(key, name, f"is not valid JSON: {bounded(str(error), quote=False)}")
    check_values(document, key, name)
    return document


def load_json(path: Path, key: str, name: str | None = None) -> Any:
    """One JSON data file, checked as YAML files are."""
    name = name or key
    return parse_json(read_bytes(path, key, name), key, name)


PROJECT_DIR = Path(__file__).resolve().parents[2]
PROJECT_DATA_DIR = PROJECT_DIR / "catalog"
# The one switch to another copy of the data (an absorbed upstream revision under test, a staging copy).
CATALOG_DIR_ENV = "NEMOTRON_CATALOG_DIR"
DATA_DIR = Path(os.environ[CATALOG_DIR_ENV]).resolve() if os.environ.get(CATALOG_DIR_ENV) else PROJECT_DATA_DIR
Model = TypeVar("Model", bound=pydantic.BaseModel)


class Data(pydantic.BaseModel):
    """Base of every data-file model: unknown keys are errors, values immutable."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def data_label(path: Path, root: Path = DATA_DIR) -> str:
    """`catalog/<path below the data root>`, the name messages use whatever the root is."""
    try:
        return f"catalog/{path.relative_to(root).as_posix()}"
    except ValueError:
        return path.name


def data_file(root: Path, relative: str, key: str) -> Path:
    """A file a data file refers to (`recipes/.../deploy.yaml`), inside the data root (no absolute path, `..`
    or symlink leading out of it)."""
    base = root.resolve()
    try:
        path = (base / relative).resolve()
    except (OSError, RuntimeError, ValueError) as error:  # a symlink loop, a NUL byte
        raise ConfigError(key, f"{bounded(relative)} cannot be resolved ({bounded(str(error), quote=False)})") from None
    if not path.is_relative_to(base):
        raise ConfigError(key, f"{bounded(relative)} leads out of catalog/", "a path relative to catalog/, inside it")
    return path


def read_documents(path: Path, key: str, root: Path = DATA_DIR) -> list[dict[str, Any]]:
    """Every non-empty YAML document of a file, each a mapping; errors name `key` and the file."""
    name = data_label(path, root)
    documents = [doc for doc in load_yaml_documents(path, key, name) if doc is not None]
    for index, doc in enumerate(documents):
        if not isinstance(doc, dict):
            where = f"{name} document {index + 1}" if len(documents) > 1 else name if key != name else "the document"
            raise ConfigError(key, f"{where} is a {type(doc).__name__}, not a mapping")
    return documents


def check_shape(document: Any, shape: type[Model], prefix: str) -> Model:
    """A document validated into `shape` (a manifest kept as written, checked to have the fields code reads);
    errors name `prefix` and the key path inside it."""
    try:
        return shape.model_validate(document)
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, shape, prefix=prefix) from None


def load_model(path: Path, model: type[Model], root: Path = DATA_DIR) -> Model:
    """One data file validated into `model`; errors name the file and the key path inside it."""
    label = data_label(path, root)
    documents = read_documents(path, label, root)
    if len(documents) != 1:
        raise ConfigError(label, f"expected one YAML document (a mapping), found {len(documents)}")
    return check_shape(documents[0], model, f"{label}: ")
