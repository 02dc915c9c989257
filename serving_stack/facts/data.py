"""Reading the project's data files (`catalog/`): one YAML reader, one way to validate, one error shape."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

import pydantic

from serving_stack.errors import ConfigError, bounded, from_validation_error
from serving_stack.facts.strict_files import load_yaml_documents

PROJECT_DATA_DIR = Path(__file__).resolve().parents[2] / "catalog"
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
    """A file a data file refers to (`recipes/.../deploy.yaml`), kept inside the data root: an absolute
    path, a `..` or a symlink that leads out of it stops with `key` named."""
    base = root.resolve()
    try:
        path = (base / relative).resolve()
    except (OSError, RuntimeError, ValueError) as error:  # a symlink loop, a NUL byte
        raise ConfigError(key, f"{bounded(relative)} cannot be resolved ({bounded(str(error), quote=False)})") from None
    if not path.is_relative_to(base):
        raise ConfigError(key, f"{bounded(relative)} leads out of catalog/", "a path relative to catalog/, inside it")
    return path


def read_documents(path: Path, key: str, root: Path = DATA_DIR) -> list[dict[str, Any]]:
    """Every non-empty YAML document of a file, each a mapping; a missing or malformed file stops with
    `key` and the file named."""
    name = data_label(path, root)
    documents = [doc for doc in load_yaml_documents(path, key, name) if doc is not None]
    for index, doc in enumerate(documents):
        if not isinstance(doc, dict):
            where = f"{name} document {index + 1}" if len(documents) > 1 else name if key != name else "the document"
            raise ConfigError(key, f"{where} is a {type(doc).__name__}, not a mapping")
    return documents


def check_shape(document: dict[str, Any], shape: type[pydantic.BaseModel], prefix: str) -> None:
    """A manifest kept as written, checked to have the fields (and types) that code reads from it."""
    try:
        shape.model_validate(document)
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, shape, prefix=prefix) from None


def load_model(path: Path, model: type[Model], root: Path = DATA_DIR) -> Model:
    """One data file validated into `model`; errors name the file and the key path inside it."""
    label = data_label(path, root)
    documents = read_documents(path, label, root)
    if len(documents) != 1:
        raise ConfigError(label, f"expected one YAML document (a mapping), found {len(documents)}")
    try:
        return model.model_validate(documents[0])
    except pydantic.ValidationError as exc:
        raise from_validation_error(exc, model, prefix=f"{label}: ") from None
