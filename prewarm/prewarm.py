#!/usr/bin/env python3
"""Read a GPU node's model checkpoints into its page cache before the inference server loads them.

Loading a 30B checkpoint from the shared network file system is the slowest part of scaling out.
A DaemonSet runs this program on every GPU node so that the worker's loader copies from RAM instead.
It ships in a ConfigMap and runs in a plain python image, so it is one stdlib-only file.

Choices, and why:
- Page cache, not a copy on local NVMe: a second copy costs disk space and its own write, and the
  loader reads the same bytes from the cache without one. Nothing is written outside --state-dir.
- Parallel byte ranges: shards are GBs; a network file system only delivers its throughput with
  many requests in flight, so --threads readers take --chunk-mb ranges across all files at once.
- No copy to user space: a reader sendfile()s its range to /dev/null, so the kernel reads the pages
  into the cache and only drops its references to them; a read() would copy every byte out again,
  which is most of the CPU a warm costs (4 GB on a 2-core VM: 0.2 s of CPU, against 0.8-2.6 s through
  a reused 1 MiB buffer; benchmarks/prewarm_bench.py compares it with fio's parallel read). A file
  system that cannot splice gets preadv into a reused 1 MiB buffer (small enough to stay in the CPU's
  cache). POSIX_FADV_SEQUENTIAL widens readahead; WILLNEED on top of synchronous large reads measured
  no gain, and mmap with MADV_POPULATE_READ (with or without WILLNEED) read at under half sendfile's
  rate. The I/O priority class only matters on block devices.
- Done-ness: --state-dir/state.json records each warmed file by resolved path, size and mtime_ns,
  so a rerun skips what is done and re-reads what changed. It is saved when a file completes, at most
  every STATE_SAVE_SECONDS, and at the end: a rename per file cost ~15 ms on the dispatching thread
  (8% of a 4 GB warm in benchmarks/prewarm_bench.py); an interruption re-reads at most those seconds
  of work. The kernel may evict pages later and stdlib cannot ask (no mincore), so "warm" honestly
  means "read into the cache during this boot": the boot id is recorded and a reboot invalidates
  both state and readiness.
- Readiness is a file, --state-dir/ready, on a node-local hostPath that a worker's initContainer
  waits on (--wait-ready). A node label would need RBAC to patch Node objects from every GPU node,
  a cluster-scoped privilege for a cache hint; a file needs none. The DaemonSet's readiness probe
  is --check-ready. The file is written atomically only when every selected file is warm, and is
  removed while re-warming or when anything failed.
- Downloaded-ness: on a first `up` the worker's pod starts (and kubelet pulls its image) while the download
  Job still runs, so --wait-ready with --models first waits for each checkpoint's DOWNLOAD_MARKER, which
  the download Job writes after verifying the snapshot refs/main names (serving_stack.plan.model_cache).
  A marker naming another revision is stale. A worker must not load a checkpoint that is not there: a
  missing marker exits NOT_DOWNLOADED (the pod's init container retries), a cold node exits 1 (load cold).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import functools
import hashlib
import json
import logging
import os
import platform
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

WARM_SUFFIXES = (".safetensors", ".bin", ".json", ".model", ".txt", ".py", ".jinja", ".tiktoken")
READ_BUFFER_BYTES = 1 << 20
PROGRESS_SECONDS = 10.0
STATE_SAVE_SECONDS = 2.0
WAIT_POLL_SECONDS = 1.0
STATE_VERSION = 1
IOPRIO_SET_SYSCALL = {"x86_64": 251, "aarch64": 30}
IOPRIO_WHO_PROCESS = 1
IOPRIO_CLASS_SHIFT = 13
IO_PRIORITIES = {"best-effort": (2, 7), "idle": (3, 0)}
DOWNLOAD_MARKER = ".nemotron-downloaded"
NOT_DOWNLOADED = 3

log = logging.getLogger("prewarm")


@dataclass(frozen=True)
class CheckpointFile:
    """A file as the loader names it (path) and the blob that holds it (resolved, the state key)."""

    path: str
    resolved: str
    size: int
    mtime_ns: int

    @property
    def signature(self) -> dict[str, int]:
        return {"size": self.size, "mtime_ns": self.mtime_ns}


@dataclass(frozen=True)
class Chunk:
    file: CheckpointFile
    offset: int
    length: int


@dataclass
class Selection:
    """The files to warm, and what keeps the node from ready before any read (subject -> reason)."""

    files: list[CheckpointFile]
    problems: dict[str, str]


@dataclass
class WarmReport:
    warmed: list[str] = field(default_factory=list)
    already_warm: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    bytes_read: int = 0
    seconds: float = 0.0


class Progress:
    """Logs bytes done, rate and ETA at most every PROGRESS_SECONDS."""

    def __init__(self, total_bytes: int) -> None:
        self.total_bytes = total_bytes
        self.started = self.last_logged = time.monotonic()

    def maybe_log(self, done_bytes: int) -> None:
        now = time.monotonic()
        if now - self.last_logged < PROGRESS_SECONDS:
            return
        self.last_logged = now
        rate = done_bytes / (now - self.started)
        eta = (self.total_bytes - done_bytes) / rate if rate else float("inf")
        log.info(
            "progress %s / %s (%.0f%%), %.0f MB/s, ETA %.0fs",
            gib(done_bytes),
            gib(self.total_bytes),
            100 * done_bytes / max(self.total_bytes, 1),
            rate / 1e6,
            eta,
        )


def gib(num_bytes: int) -> str:
    return f"{num_bytes / (1 << 30):.2f} GiB"


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def repo_dir_of(cache_root: Path, repo_id: str) -> Path:
    return cache_root / "hub" / ("models--" + repo_id.replace("/", "--"))


def downloaded(cache_root: Path, repo_id: str) -> bool:
    """The download Job's marker names the revision refs/main names (a new revision clears it)."""
    repo_dir = repo_dir_of(cache_root, repo_id)
    try:
        marker = json.loads((repo_dir / DOWNLOAD_MARKER).read_text())
        return isinstance(marker, dict) and marker.get("revision") == (repo_dir / "refs" / "main").read_text().strip()
    except (OSError, ValueError):
        return False


def snapshot_dirs(cache_root: Path, repo_id: str) -> list[Path]:
    """The revision refs/main names, else every snapshot: old revisions would take RAM the server needs."""
    repo_dir = repo_dir_of(cache_root, repo_id)
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        candidates = [repo_dir / "snapshots" / ref.read_text().strip()]
    else:
        candidates = sorted((repo_dir / "snapshots").glob("*"))
    return [path for path in candidates if path.is_dir()]


def missing_shards(snapshot: Path) -> dict[str, str]:
    """A download in progress has an index naming shards whose symlinks are not there yet."""
    problems: dict[str, str] = {}
    for index in snapshot.rglob("*.index.json"):
        try:
            shards = set(json.loads(index.read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError, AttributeError) as err:
            problems[str(index)] = f"unreadable index: {err}"
            continue
        for shard in sorted(shards):
            if not (index.parent / shard).is_file():
                problems[str(index.parent / shard)] = f"named in {index.name} but missing"
    return problems


def scan(cache_root: Path, repo_ids: list[str]) -> Selection:
    """Checkpoint files a loader reads, deduplicated by the blob their snapshot symlink points to."""
    files: dict[str, CheckpointFile] = {}
    problems: dict[str, str] = {}
    for repo_id in repo_ids:
        snapshots = snapshot_dirs(cache_root, repo_id)
        if not snapshots:
            problems[repo_id] = f"no snapshot under {cache_root}/hub"
        found = 0
        for snapshot in snapshots:
            problems.update(missing_shards(snapshot))
            for dirpath, _, names in os.walk(snapshot):
                for name in sorted(n for n in names if n.endswith(WARM_SUFFIXES)):
                    path = os.path.join(dirpath, name)
                    try:
                        resolved = os.path.realpath(path, strict=True)
                        stat = os.stat(resolved)
                    except OSError as err:
                        problems[path] = str(err)
                        continue
                    found += 1
                    files.setdefault(resolved, CheckpointFile(path, resolved, stat.st_size, stat.st_mtime_ns))
        if snapshots and not found:
            problems[repo_id] = "snapshot holds no checkpoint files"
    return Selection(sorted(files.values(), key=lambda f: f.path), problems)


def write_json_atomic(path: Path, data: object) -> None:
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(scratch, path)


def load_state(state_dir: Path) -> dict[str, dict[str, int]]:
    """Files warmed during this boot; older state describes a page cache that no longer exists."""
    try:
        state = json.loads((state_dir / "state.json").read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION or state.get("boot_id") != boot_id():
        return {}
    return state["files"]


def save_state(state_dir: Path, files: dict[str, dict[str, int]]) -> None:
    write_json_atomic(state_dir / "state.json", {"version": STATE_VERSION, "boot_id": boot_id(), "files": files})


def write_ready(state_dir: Path, files: list[CheckpointFile]) -> None:
    listing = json.dumps([[f.resolved, f.size, f.mtime_ns] for f in files])
    write_json_atomic(
        state_dir / "ready",
        {
            "boot_id": boot_id(),
            "fingerprint": hashlib.sha256(listing.encode()).hexdigest(),
            "files": len(files),
            "bytes": sum(f.size for f in files),
        },
    )


def clear_ready(state_dir: Path) -> None:
    (state_dir / "ready").unlink(missing_ok=True)


def is_ready(state_dir: Path) -> bool:
    try:
        ready = json.loads((state_dir / "ready").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(ready, dict) and ready.get("boot_id") == boot_id()


def apply_io_priority(name: str) -> None:
    """Lower this process's disk priority; reader threads inherit it. Best effort: never fatal."""
    if name == "none":
        return
    io_class, level = IO_PRIORITIES[name]
    syscall_number = IOPRIO_SET_SYSCALL.get(platform.machine())
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if syscall_number is None:
            raise OSError(f"no ioprio_set number known for {platform.machine()}")
        if libc.syscall(syscall_number, IOPRIO_WHO_PROCESS, 0, io_class << IOPRIO_CLASS_SHIFT | level) != 0:
            raise OSError(os.strerror(ctypes.get_errno()))
    except OSError as err:
        log.warning("io priority %s not applied, reading at default priority: %s", name, err)


_reader = threading.local()
_splice = True  # False once the file system refused sendfile: every later range goes through a buffer


@functools.cache
def sink() -> int:
    """/dev/null, opened once per process (warm() opens it before its readers start)."""
    return os.open(os.devnull, os.O_WRONLY)


def read_into_cache(fd: int, offset: int, length: int) -> int:
    """Read up to length bytes at offset into the page cache; returns how many (0 at the end of the file)."""
    global _splice
    if _splice:
        try:
            return os.sendfile(sink(), fd, offset, length)
        except OSError as err:
            if err.errno not in (errno.EINVAL, errno.ENOSYS):
                raise
            _splice = False
            log.info("the file system cannot splice (%s): reading through a buffer", err)
    buffer = getattr(_reader, "buffer", None)
    if buffer is None:
        buffer = _reader.buffer = memoryview(bytearray(READ_BUFFER_BYTES))
    return os.preadv(fd, [buffer[: min(len(buffer), length)]], offset)


def read_chunk(chunk: Chunk) -> int:
    """Read one byte range into the page cache; the bytes are dropped, the cache keeps them."""
    fd = os.open(chunk.file.resolved, os.O_RDONLY)
    try:
        if hasattr(os, "posix_fadvise"):
            with contextlib.suppress(OSError):
                os.posix_fadvise(fd, chunk.offset, chunk.length, os.POSIX_FADV_SEQUENTIAL)
        offset, end = chunk.offset, chunk.offset + chunk.length
        while offset < end:
            count = read_into_cache(fd, offset, end - offset)
            if count == 0:
                raise OSError(f"file ended at byte {offset}, expected {chunk.file.size}")
            offset += count
    finally:
        os.close(fd)
    return chunk.length


def chunks_of(files: list[CheckpointFile], chunk_bytes: int) -> list[Chunk]:
    """Byte ranges in file order, so readers work on neighbouring ranges; an empty file still gets opened."""
    return [
        Chunk(f, offset, min(chunk_bytes, f.size - offset))
        for f in files
        for offset in range(0, max(f.size, 1), chunk_bytes)
    ]


def warm(
    files: list[CheckpointFile], state: dict[str, dict[str, int]], state_dir: Path, threads: int, chunk_bytes: int
) -> WarmReport:
    """Read every file whose signature is not in state; record each file in state once all its ranges are read."""
    report = WarmReport()
    started = time.monotonic()
    pending = [f for f in files if state.get(f.resolved) != f.signature]
    report.already_warm = len(files) - len(pending)
    chunks = chunks_of(pending, chunk_bytes)
    ranges_left = {f.resolved: 0 for f in pending}
    for chunk in chunks:
        ranges_left[chunk.file.resolved] += 1
    progress = Progress(sum(f.size for f in pending))
    last_saved = float("-inf")
    sink()
    pool = ThreadPoolExecutor(threads, thread_name_prefix="reader")
    try:
        in_flight: dict[Future[int], Chunk] = {pool.submit(read_chunk, chunk): chunk for chunk in chunks}
        while in_flight:
            done, _ = wait(in_flight, timeout=PROGRESS_SECONDS, return_when=FIRST_COMPLETED)
            for future in done:
                file = in_flight.pop(future).file
                try:
                    report.bytes_read += future.result()
                except OSError as err:
                    if file.resolved not in report.failed:
                        report.failed[file.resolved] = str(err)
                        log.error("cannot warm %s: %s", file.path, err)
                ranges_left[file.resolved] -= 1
                if ranges_left[file.resolved] == 0 and file.resolved not in report.failed:
                    state[file.resolved] = file.signature
                    report.warmed.append(file.resolved)
                    if time.monotonic() - last_saved >= STATE_SAVE_SECONDS:
                        save_state(state_dir, state)
                        last_saved = time.monotonic()
            progress.maybe_log(report.bytes_read)
    finally:
        pool.shutdown(cancel_futures=True)
    report.seconds = time.monotonic() - started
    return report


def run_pass(args: argparse.Namespace) -> WarmReport:
    """Scan, warm what is not warm, and make the ready file say exactly whether everything is."""
    args.state_dir.mkdir(parents=True, exist_ok=True)
    selection = scan(args.cache_root, args.models)
    for subject, reason in selection.problems.items():
        log.error("cannot warm %s: %s", subject, reason)
    known = load_state(args.state_dir)
    state = {f.resolved: known[f.resolved] for f in selection.files if f.resolved in known}
    if selection.problems or len(state) < len(selection.files):
        clear_ready(args.state_dir)
    report = warm(selection.files, state, args.state_dir, args.threads, args.chunk_mb << 20)
    report.failed.update(selection.problems)
    save_state(args.state_dir, state)
    if report.failed:
        clear_ready(args.state_dir)
    else:
        write_ready(args.state_dir, selection.files)
    return report


def log_summary(report: WarmReport) -> None:
    rate = report.bytes_read / report.seconds / 1e6 if report.seconds else 0.0
    log.info(
        "summary: %d files read (%s in %.1fs, %.0f MB/s), %d already warm, %d failed, %s",
        len(report.warmed),
        gib(report.bytes_read),
        report.seconds,
        rate,
        report.already_warm,
        len(report.failed),
        "not ready" if report.failed else "ready",
    )


def wait_ready(state_dir: Path, timeout_seconds: float, cache_root: Path, models: list[str]) -> int:
    """0 once every model is downloaded and the node warm, within one timeout; NOT_DOWNLOADED or 1 after it."""
    deadline = time.monotonic() + timeout_seconds
    while missing := [m for m in models if not downloaded(cache_root, m)]:
        if time.monotonic() >= deadline:
            log.error(
                "not downloaded after %.0fs: %s (no current %s)", timeout_seconds, ", ".join(missing), DOWNLOAD_MARKER
            )
            return NOT_DOWNLOADED
        time.sleep(WAIT_POLL_SECONDS)
    while not is_ready(state_dir):
        if time.monotonic() >= deadline:
            log.error("not ready after %.0fs: no valid %s", timeout_seconds, state_dir / "ready")
            return 1
        time.sleep(WAIT_POLL_SECONDS)
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cache-root",
        type=Path,
        default=env("PREWARM_CACHE_ROOT", "/model-cache"),
        help="HF_HOME holding hub/models--<org>--<name> (env PREWARM_CACHE_ROOT)",
    )
    parser.add_argument(
        "--models",
        default=env("PREWARM_MODELS", ""),
        help="comma-separated HF repo ids, e.g. nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4 "
        "(env PREWARM_MODELS)",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=env("PREWARM_STATE_DIR", "/var/lib/prewarm"),
        help="writable node-local dir for state.json and ready (env PREWARM_STATE_DIR)",
    )
    parser.add_argument(
        "--threads", type=int, default=env("PREWARM_THREADS", "8"), help="parallel readers, 1-64 (env PREWARM_THREADS)"
    )
    parser.add_argument(
        "--chunk-mb",
        type=int,
        default=env("PREWARM_CHUNK_MB", "64"),
        help="byte range per read task in MiB, 1-1024 (env PREWARM_CHUNK_MB)",
    )
    parser.add_argument(
        "--io-priority",
        choices=["best-effort", "idle", "none"],
        default=env("PREWARM_IO_PRIORITY", "best-effort"),
        help="(env PREWARM_IO_PRIORITY)",
    )
    parser.add_argument(
        "--poll-seconds",
        type=float,
        default=env("PREWARM_POLL_SECONDS", "60"),
        help="rescan interval in --watch mode (env PREWARM_POLL_SECONDS)",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds --wait-ready waits")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--watch", action="store_true", help="keep rescanning and re-warm new or changed files")
    mode.add_argument("--check-ready", action="store_true", help="exit 0 if this node is warm, else 1")
    mode.add_argument(
        "--wait-ready",
        action="store_true",
        help=f"wait up to --timeout for --models downloaded, then warm; exit 0, else {NOT_DOWNLOADED} or 1",
    )
    args = parser.parse_args(argv)
    args.models = [repo_id.strip() for repo_id in args.models.split(",") if repo_id.strip()]
    if args.check_ready or args.wait_ready:
        return args
    if not args.models:
        parser.error("--models (or PREWARM_MODELS) must name at least one HF repo id")
    for repo_id in args.models:
        if repo_id.count("/") != 1:
            parser.error(f"--models: {repo_id!r} is not an HF repo id of the form <org>/<name>")
    if not 1 <= args.threads <= 64:
        parser.error(f"--threads: {args.threads} is outside 1-64")
    if not 1 <= args.chunk_mb <= 1024:
        parser.error(f"--chunk-mb: {args.chunk_mb} is outside 1-1024")
    if args.poll_seconds <= 0:
        parser.error(f"--poll-seconds: {args.poll_seconds} must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    args = parse_args(argv)
    if args.check_ready:
        return 0 if is_ready(args.state_dir) else 1
    if args.wait_ready:
        return wait_ready(args.state_dir, args.timeout, args.cache_root, args.models)
    apply_io_priority(args.io_priority)
    report = run_pass(args)
    log_summary(report)
    if not args.watch:
        return 1 if report.failed else 0
    log.info("watching %s every %.0fs", ", ".join(args.models), args.poll_seconds)
    while True:
        time.sleep(args.poll_seconds)
        report = run_pass(args)
        if report.warmed or report.failed:
            log_summary(report)


if __name__ == "__main__":
    sys.exit(main())
