"""The prewarm program warms exactly the checkpoint files, resumes, notices changes and reports readiness honestly."""

import collections
import errno
import importlib.util
import json
import logging
import os
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).resolve().parents[1] / "prewarm" / "prewarm.py"
_spec = importlib.util.spec_from_file_location("prewarm", PROGRAM)
prewarm = importlib.util.module_from_spec(_spec)
sys.modules["prewarm"] = prewarm
_spec.loader.exec_module(prewarm)

MODELS = ["nvidia/Base-NVFP4", "nvidia/Base-NVFP4-DFlash"]
MIB = 1 << 20


def add_file(repo_dir: Path, revision: str, name: str, content: bytes) -> Path:
    """Store content as a blob and link it from the snapshot, as huggingface_hub does."""
    blob = repo_dir / "blobs" / f"{revision}-{name.replace('/', '_')}"
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(content)
    link = repo_dir / "snapshots" / revision / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(blob, link.parent))
    return blob


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    root = tmp_path / "model-cache"
    base = root / "hub" / "models--nvidia--Base-NVFP4"
    shards = {"model-00001-of-00002.safetensors": b"a" * (2 * MIB + 5), "model-00002-of-00002.safetensors": b"b" * MIB}
    for name, content in shards.items():
        add_file(base, "rev2", name, content)
    index = {"weight_map": dict(zip(["w1", "w2"], shards, strict=True))}
    add_file(base, "rev2", "model.safetensors.index.json", json.dumps(index).encode())
    add_file(base, "rev2", "config.json", b"{}")
    add_file(base, "rev2", "tokenizer.json", b"{}" * 100)
    add_file(base, "rev2", "README.md", b"# card")
    add_file(base, "rev2", ".gitattributes", b"*.safetensors lfs")
    add_file(base, "rev1", "model.safetensors", b"old" * MIB)
    (base / "blobs" / "orphan.safetensors").write_bytes(b"x" * MIB)
    (base / "blobs" / "pending.incomplete").write_bytes(b"x" * MIB)
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text("rev2")
    draft = root / "hub" / "models--nvidia--Base-NVFP4-DFlash"
    add_file(draft, "d1", "model.safetensors", b"d" * (MIB // 2))
    add_file(draft, "d1", "config.json", b"{}")
    return root


def cli_args(cache: Path, state_dir: Path) -> list[str]:
    return [
        "--cache-root",
        str(cache),
        "--models",
        ",".join(MODELS),
        "--state-dir",
        str(state_dir),
        "--threads",
        "2",
        "--chunk-mb",
        "1",
        "--io-priority",
        "none",
    ]


def run(cache: Path, state_dir: Path) -> "prewarm.WarmReport":
    return prewarm.run_pass(prewarm.parse_args(cli_args(cache, state_dir)))


def expected_files(cache: Path) -> dict[str, int]:
    names = [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model.safetensors.index.json",
        "config.json",
        "tokenizer.json",
    ]
    paths = [cache / "hub/models--nvidia--Base-NVFP4/snapshots/rev2" / name for name in names]
    draft = cache / "hub/models--nvidia--Base-NVFP4-DFlash/snapshots/d1"
    paths += [draft / "model.safetensors", draft / "config.json"]
    return {os.path.realpath(path): path.stat().st_size for path in paths}


def state_files(state_dir: Path) -> dict[str, dict[str, int]]:
    return json.loads((state_dir / "state.json").read_text())["files"]


def test_warms_every_checkpoint_file_of_the_current_revision(cache: Path, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    report = run(cache, state_dir)
    expected = expected_files(cache)
    assert sorted(report.warmed) == sorted(expected)
    assert report.bytes_read == sum(expected.values())
    assert report.failed == {}
    assert {path: entry["size"] for path, entry in state_files(state_dir).items()} == expected


def test_skips_non_checkpoint_files_and_unreferenced_blobs(cache: Path) -> None:
    selection = prewarm.scan(cache, MODELS)
    assert {f.resolved: f.size for f in selection.files} == expected_files(cache)
    assert selection.problems == {}


@pytest.mark.parametrize("splices", [True, False], ids=["sendfile", "file-system-cannot-splice"])
def test_every_byte_is_read_once_by_sendfile_else_through_a_buffer(
    cache: Path, tmp_path: Path, monkeypatch, caplog, splices: bool
) -> None:
    read: collections.Counter[str] = collections.Counter()
    real_sendfile, real_preadv = os.sendfile, os.preadv

    def sendfile(out_fd: int, in_fd: int, offset: int, count: int) -> int:
        if not splices:
            raise OSError(errno.EINVAL, "Invalid argument")
        sent = real_sendfile(out_fd, in_fd, offset, min(count, 100_000))  # short transfers are continued
        read["sendfile"] += sent
        return sent

    def preadv(fd: int, buffers: list, offset: int) -> int:
        count = real_preadv(fd, buffers, offset)
        read["preadv"] += count
        return count

    monkeypatch.setattr(prewarm, "_splice", True)
    monkeypatch.setattr(os, "sendfile", sendfile)
    monkeypatch.setattr(os, "preadv", preadv)
    state_dir = tmp_path / "state"
    with caplog.at_level(logging.INFO, logger="prewarm"):
        report = run(cache, state_dir)
    total = sum(expected_files(cache).values())
    assert report.bytes_read == total and not report.failed
    assert dict(read) == {"sendfile" if splices else "preadv": total}
    assert (state_dir / "ready").exists()
    assert sum("cannot splice" in message for message in caplog.messages) == (0 if splices else 1)


def test_resumes_after_interruption_reading_only_the_rest(cache: Path, tmp_path: Path, monkeypatch) -> None:
    state_dir = tmp_path / "state"
    real_save_state = prewarm.save_state

    def save_then_die(*args) -> None:
        real_save_state(*args)
        raise KeyboardInterrupt

    monkeypatch.setattr(prewarm, "save_state", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        run(cache, state_dir)
    monkeypatch.undo()
    (done_before,) = state_files(state_dir)
    assert not (state_dir / "ready").exists()

    read = []
    real_read_chunk = prewarm.read_chunk
    monkeypatch.setattr(prewarm, "read_chunk", lambda chunk: read.append(chunk.file.resolved) or real_read_chunk(chunk))
    report = run(cache, state_dir)
    remaining = set(expected_files(cache)) - {done_before}
    assert set(read) == set(report.warmed) == remaining
    assert report.already_warm == 1
    assert (state_dir / "ready").exists()


def test_rewarms_exactly_the_changed_and_new_files_while_not_ready(cache: Path, tmp_path: Path, monkeypatch) -> None:
    state_dir = tmp_path / "state"
    run(cache, state_dir)
    assert (state_dir / "ready").exists()
    ready_while_reading = []
    real_read_chunk = prewarm.read_chunk

    def read_noting_readiness(chunk) -> int:
        ready_while_reading.append((state_dir / "ready").exists())
        return real_read_chunk(chunk)

    monkeypatch.setattr(prewarm, "read_chunk", read_noting_readiness)
    grown = os.path.realpath(cache / "hub/models--nvidia--Base-NVFP4/snapshots/rev2/model-00002-of-00002.safetensors")
    with open(grown, "ab") as blob:
        blob.write(b"more")
    new_blob = add_file(cache / "hub/models--nvidia--Base-NVFP4", "rev2", "tokenizer_config.json", b"{}")
    report = run(cache, state_dir)
    assert sorted(report.warmed) == sorted([grown, str(new_blob.resolve())])
    assert report.already_warm == len(expected_files(cache)) - 1
    assert ready_while_reading and not any(ready_while_reading)
    assert (state_dir / "ready").exists()


def test_unreadable_file_is_logged_once_and_the_rest_still_warm(
    cache: Path, tmp_path: Path, monkeypatch, caplog
) -> None:
    state_dir = tmp_path / "state"
    snapshot = cache / "hub/models--nvidia--Base-NVFP4/snapshots/rev2"
    (snapshot / "special_tokens_map.json").symlink_to("../../blobs/never-downloaded")
    shard = os.path.realpath(snapshot / "model-00001-of-00002.safetensors")
    real_open = os.open

    def open_denying_shard(path, *args):
        if path == shard:
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args)

    monkeypatch.setattr(os, "open", open_denying_shard)
    with caplog.at_level(logging.INFO, logger="prewarm"):
        exit_code = prewarm.main(cli_args(cache, state_dir))
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert exit_code == 1
    assert errors == [
        f"cannot warm {snapshot}/special_tokens_map.json: [Errno 2] No such file or directory: "
        f"'{cache}/hub/models--nvidia--Base-NVFP4/blobs/never-downloaded'",
        f"cannot warm {snapshot}/model-00001-of-00002.safetensors: [Errno 13] Permission denied",
    ]
    assert set(state_files(state_dir)) == set(expected_files(cache)) - {shard}
    assert not (state_dir / "ready").exists()
    summary = caplog.records[-1].getMessage()
    assert summary.startswith("summary: 6 files read") and summary.endswith("2 failed, not ready")


def test_ready_file_tracks_warmness_and_boot(cache: Path, tmp_path: Path, monkeypatch) -> None:
    state_dir = tmp_path / "state"
    assert prewarm.main(["--check-ready", "--state-dir", str(state_dir)]) == 1
    assert prewarm.main(["--wait-ready", "--timeout", "0", "--state-dir", str(state_dir)]) == 1
    run(cache, state_dir)
    ready = json.loads((state_dir / "ready").read_text())
    assert ready["files"] == len(expected_files(cache)) and ready["bytes"] == sum(expected_files(cache).values())
    assert prewarm.main(["--check-ready", "--state-dir", str(state_dir)]) == 0
    assert prewarm.main(["--wait-ready", "--timeout", "0", "--state-dir", str(state_dir)]) == 0
    monkeypatch.setattr(prewarm, "boot_id", lambda: "after-reboot")
    assert prewarm.main(["--check-ready", "--state-dir", str(state_dir)]) == 1
    assert len(run(cache, state_dir).warmed) == len(expected_files(cache))


def test_incomplete_download_is_not_ready_and_exits_nonzero(cache: Path, tmp_path: Path, caplog) -> None:
    state_dir = tmp_path / "state"
    assert run(cache, state_dir).failed == {}
    missing_shard = cache / "hub/models--nvidia--Base-NVFP4/snapshots/rev2/model-00002-of-00002.safetensors"
    missing_shard.unlink()
    assert prewarm.main(cli_args(cache, state_dir)) == 1
    assert f"cannot warm {missing_shard}: named in model.safetensors.index.json but missing" in caplog.messages
    assert not (state_dir / "ready").exists()
    assert prewarm.main(["--check-ready", "--state-dir", str(state_dir)]) == 1


def test_watch_rewarms_a_checkpoint_that_changes_between_scans(cache: Path, tmp_path: Path, monkeypatch) -> None:
    state_dir = tmp_path / "state"
    draft = cache / "hub/models--nvidia--Base-NVFP4-DFlash"

    class StopWatchingError(Exception):
        pass

    def between_scans(seconds: float) -> None:
        if (draft / "snapshots" / "d2").exists():
            raise StopWatchingError
        add_file(draft, "d2", "model.safetensors", b"new" * MIB)
        (draft / "refs").mkdir()
        (draft / "refs" / "main").write_text("d2")

    monkeypatch.setattr(prewarm.time, "sleep", between_scans)
    with pytest.raises(StopWatchingError):
        prewarm.main([*cli_args(cache, state_dir), "--watch", "--poll-seconds", "5"])
    warm = state_files(state_dir)
    assert str((draft / "snapshots/d2/model.safetensors").resolve()) in warm
    assert str((draft / "snapshots/d1/model.safetensors").resolve()) not in warm
    assert prewarm.main(["--check-ready", "--state-dir", str(state_dir)]) == 0
