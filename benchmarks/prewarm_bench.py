"""Benchmark prewarm/prewarm.py on a synthetic checkpoint in Hugging Face cache layout.

Not a test: it writes GBs and needs root to drop the page cache. In one run it measures a cold
single-reader read, the best cold parallel raw read over several reader counts, the prewarm
program's cold throughput, and a loader's time from a cold cache versus right after prewarm.
It also runs the standard tools on the same files (`vmtouch -t`, and `fio`'s best parallel
sequential read; `standard_readers.py` installs the Debian packages when missing).
Goals: prewarm >= 0.9 x the best raw read; prewarm >= 1.0 x vmtouch; prewarm >= 0.95 x the best fio
read (issue 33); cold load >= 5 x the warm load.

    python benchmarks/prewarm_bench.py [--size-gb 4] [--shard-gb 1] [--dir PARENT] [--keep] [--rounds 5]

~300 lines, kept as one script so it runs by path with no package around it; the standard tools'
drivers live beside it in standard_readers.py.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import mmap
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import standard_readers

PREWARM = Path(__file__).resolve().parents[1] / "prewarm" / "prewarm.py"
BASE_MODEL = "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"
MODELS = (BASE_MODEL, f"{BASE_MODEL}-DFlash", f"{BASE_MODEL}-DSpark")
DRAFT_BYTES = 64 << 20
PATTERN_BYTES = 64 << 20
BUFFER_BYTES = 8 << 20
RANGE_BYTES = 64 << 20
READER_COUNTS = (1, 2, 4, 8)
PREWARM_THREADS = 8
PREWARM_GOAL = 0.9
VMTOUCH_GOAL = 1.0
FIO_GOAL = 0.95
LOAD_GOAL = 5.0


@dataclass(frozen=True)
class Measurement:
    name: str
    readers: str
    seconds: float
    num_bytes: int

    @property
    def mb_per_s(self) -> float:
        return self.num_bytes / self.seconds / 1e6


def add_file(cache_root: Path, repo_id: str, name: str, size: int, pattern: bytes) -> Path:
    """Write a blob and link it from snapshots/<rev>/, as huggingface_hub does; returns the link."""
    repo_dir = cache_root / "hub" / ("models--" + repo_id.replace("/", "--"))
    revision = hashlib.sha1(repo_id.encode()).hexdigest()
    blob = repo_dir / "blobs" / hashlib.sha256(f"{repo_id}/{name}".encode()).hexdigest()
    blob.parent.mkdir(parents=True, exist_ok=True)
    with open(blob, "wb") as out:
        for offset in range(0, size, len(pattern)):
            out.write(pattern[: min(len(pattern), size - offset)])
        out.flush()
        os.fsync(out.fileno())
    link = repo_dir / "snapshots" / revision / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(blob, link.parent))
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / "main").write_text(revision)
    return link


def make_checkpoint(cache_root: Path, size_bytes: int, shard_bytes: int) -> list[Path]:
    pattern = os.urandom(PATTERN_BYTES)
    count = math.ceil(size_bytes / shard_bytes)
    shards = [f"model-{i:05d}-of-{count:05d}.safetensors" for i in range(1, count + 1)]
    index = json.dumps({"weight_map": {f"layer.{i}": shard for i, shard in enumerate(shards)}}).encode()
    paths = [
        add_file(cache_root, BASE_MODEL, shard, min(shard_bytes, size_bytes - i * shard_bytes), pattern)
        for i, shard in enumerate(shards)
    ]
    paths.append(add_file(cache_root, BASE_MODEL, "model.safetensors.index.json", len(index), index))
    for repo_id in MODELS:
        paths.append(add_file(cache_root, repo_id, "config.json", 4096, pattern))
        paths.append(add_file(cache_root, repo_id, "tokenizer.json", 4 << 20, pattern))
    for draft in MODELS[1:]:
        paths.append(add_file(cache_root, draft, "model.safetensors", DRAFT_BYTES, pattern))
    return paths


def drop_page_cache() -> bool:
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3")
    except OSError:
        return False
    return True


def sequential_read(paths: list[Path]) -> int:
    buffer = memoryview(bytearray(BUFFER_BYTES))
    total = 0
    for path in paths:
        with open(path, "rb", buffering=0) as source:
            while count := source.readinto(buffer):
                total += count
    return total


def parallel_read(paths: list[Path], readers: int) -> int:
    """Split files into ranges; reader i takes every readers-th range, with its own buffer."""
    ranges = [
        (path, offset, min(RANGE_BYTES, path.stat().st_size - offset))
        for path in paths
        for offset in range(0, path.stat().st_size, RANGE_BYTES)
    ]

    def reader(mine: list[tuple[Path, int, int]]) -> int:
        buffer = memoryview(bytearray(BUFFER_BYTES))
        total = 0
        for path, offset, length in mine:
            with open(path, "rb", buffering=0) as source:
                source.seek(offset)
                while length and (count := source.readinto(buffer[: min(length, BUFFER_BYTES)])):
                    total += count
                    length -= count
        return total

    with ThreadPoolExecutor(readers) as pool:
        return sum(pool.map(reader, [ranges[i::readers] for i in range(readers)]))


def load_like_safetensors(paths: list[Path]) -> int:
    """A loader maps each file and copies its tensors out of the mapping, one file after another."""
    buffer = memoryview(bytearray(BUFFER_BYTES))
    total = 0
    for path in paths:
        with open(path, "rb") as source, mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            with memoryview(mapped) as view:
                for offset in range(0, len(view), BUFFER_BYTES):
                    size = min(BUFFER_BYTES, len(view) - offset)
                    buffer[:size] = view[offset : offset + size]
            total += len(mapped)
    return total


def load_prewarm() -> ModuleType:
    """Import the program by path, so it runs in this process like the raw reads it is compared with.

    A subprocess would add a Python start-up read from the just-dropped cache (~0.3 s here) to its time.
    """
    spec = importlib.util.spec_from_file_location("prewarm", PREWARM)
    module = importlib.util.module_from_spec(spec)
    sys.modules["prewarm"] = module
    spec.loader.exec_module(module)
    return module


def run_prewarm(program: ModuleType, cache_root: Path, state_dir: Path) -> int:
    exit_code = program.main(
        [
            "--cache-root",
            str(cache_root),
            "--models",
            ",".join(MODELS),
            "--state-dir",
            str(state_dir),
            "--threads",
            str(PREWARM_THREADS),
        ]
    )
    if exit_code != 0:
        raise SystemExit(f"prewarm exited {exit_code}; figures would be meaningless")
    return json.loads((state_dir / "ready").read_text())["bytes"]


def measure(name: str, readers: str, read: Callable[[], int], cold: bool) -> Measurement:
    if cold:
        drop_page_cache()
    started = time.perf_counter()
    num_bytes = read()
    return Measurement(name, readers, time.perf_counter() - started, num_bytes)


def verdict(ratio: float, goal: float) -> str:
    return f"{ratio:.2f} (goal >= {goal}) {'PASS' if ratio >= goal else 'MISS'}"


def print_table(rows: list[Measurement]) -> None:
    header = ("measurement", "readers", "seconds", "GB", "MB/s")
    cells = [(m.name, m.readers, f"{m.seconds:.2f}", f"{m.num_bytes / 1e9:.2f}", f"{m.mb_per_s:.0f}") for m in rows]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(str(row[i])) for row in [header, *cells]) for i in range(len(header))]
        for row in [header, *cells]:
            print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=False)))
        return
    table = Table(*header)
    for row in cells:
        table.add_row(*row)
    Console().print(table)


def cold_fio(blobs: list[Path], jobs: int) -> list[Measurement]:
    if not drop_page_cache():
        raise SystemExit("the page cache could not be dropped before fio")
    fio_seconds, wall_seconds, num_bytes = standard_readers.fio_read(blobs, jobs)
    return [
        Measurement("fio sequential read (cold, fio's clock)", str(jobs), fio_seconds, num_bytes),
        Measurement("fio sequential read (cold, wall clock)", str(jobs), wall_seconds, num_bytes),
    ]


def one_round(
    paths: list[Path], program: ModuleType, cache_root: Path, state_dir: Path, rotation: int
) -> list[Measurement]:
    """Every measurement once. Rounds rotate the order, so drift in a shared machine's disk or load
    does not always favour the same reader; warm load stays right after prewarm."""
    blobs = [path.resolve() for path in paths]  # the tools get the files the links point at, as prewarm reads them

    def prewarm_then_warm_load() -> list[Measurement]:
        shutil.rmtree(state_dir, ignore_errors=True)  # a fresh state: a rerun would skip warm files
        return [
            measure(
                "prewarm program (cold)",
                str(PREWARM_THREADS),
                lambda: run_prewarm(program, cache_root, state_dir),
                cold=True,
            ),
            measure("warm load after prewarm", "1", lambda: load_like_safetensors(paths), cold=False),
        ]

    steps: list[Callable[[], list[Measurement]]] = [
        lambda: [measure("cold sequential read", "1", lambda: sequential_read(paths), cold=True)],
        *[
            lambda n=n: [measure("cold parallel raw read", str(n), lambda: parallel_read(paths, n), cold=True)]
            for n in READER_COUNTS
        ],
        lambda: [measure("cold load (mmap + copy)", "1", lambda: load_like_safetensors(paths), cold=True)],
        prewarm_then_warm_load,
        lambda: [measure("vmtouch -t (cold)", "1", lambda: standard_readers.vmtouch_touch(blobs), cold=True)],
        *[lambda n=n: cold_fio(blobs, n) for n in READER_COUNTS],
    ]
    rotation %= len(steps)
    return [m for step in steps[rotation:] + steps[:rotation] for m in step()]


def median_of(rounds: list[list[Measurement]]) -> list[Measurement]:
    by_key: dict[tuple[str, str], list[Measurement]] = {}
    for measurement in (m for r in rounds for m in r):
        by_key.setdefault((measurement.name, measurement.readers), []).append(measurement)
    return [
        Measurement(name, readers, statistics.median(m.seconds for m in ms), ms[0].num_bytes)
        for (name, readers), ms in by_key.items()
    ]


def ratios(measurements: list[Measurement]) -> dict[str, float]:
    by = {(m.name, m.readers): m for m in measurements}
    prewarm, vmtouch = by["prewarm program (cold)", str(PREWARM_THREADS)], by["vmtouch -t (cold)", "1"]
    raw = max((m for m in measurements if m.name.startswith("cold") and "read" in m.name), key=lambda m: m.mb_per_s)
    fio = max((m for m in measurements if m.name.endswith("fio's clock)")), key=lambda m: m.mb_per_s)
    fio_wall = max((m for m in measurements if m.name.endswith("wall clock)")), key=lambda m: m.mb_per_s)
    return {
        "raw": prewarm.mb_per_s / raw.mb_per_s,
        "vmtouch": prewarm.mb_per_s / vmtouch.mb_per_s,
        "fio": prewarm.mb_per_s / fio.mb_per_s,
        "fio-wall": prewarm.mb_per_s / fio_wall.mb_per_s,
        "load": by["cold load (mmap + copy)", "1"].seconds / by["warm load after prewarm", "1"].seconds,
    }


def compare(paths: list[Path], cache_root: Path, state_dir: Path, rounds: int) -> None:
    program = load_prewarm()
    print(standard_readers.ensure_tools())
    if not drop_page_cache():
        print(
            "COLD MEASUREMENTS (incl. vmtouch and fio) SKIPPED: cannot write /proc/sys/vm/drop_caches (needs root); cold read, "
            "prewarm throughput and cold load would be served from the page cache and lie."
        )
        run_prewarm(program, cache_root, state_dir)
        print_table([measure("warm load after prewarm", "1", lambda: load_like_safetensors(paths), cold=False)])
        return
    results = [one_round(paths, program, cache_root, state_dir, rotation) for rotation in range(rounds)]
    medians = median_of(results)
    print(f"medians of {rounds} round(s):")
    print_table(medians)
    per_round = [ratios(r) for r in results]
    goals = {
        "raw": ("prewarm / best raw read", PREWARM_GOAL),
        "vmtouch": ("prewarm / vmtouch -t", VMTOUCH_GOAL),
        "fio": ("prewarm / best fio read (fio's clock)", FIO_GOAL),
        "fio-wall": ("prewarm / best fio read (wall clock, as prewarm is timed)", FIO_GOAL),
        "load": ("cold load / warm load", LOAD_GOAL),
    }
    for key, value in ratios(medians).items():
        label, goal = goals[key]
        spread = [r[key] for r in per_round]
        print(f"{label}: {verdict(value, goal)}  (per round {min(spread):.2f}-{max(spread):.2f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gb", type=float, default=4.0, help="base checkpoint size")
    parser.add_argument("--shard-gb", type=float, default=1.0, help="shard size")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()), help="parent of the scratch dir")
    parser.add_argument("--keep", action="store_true", help="keep the synthetic checkpoint")
    parser.add_argument("--rounds", type=int, default=5, help="measure everything this many times; report medians")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    args.dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="prewarm-bench-", dir=args.dir))
    cache_root = scratch / "model-cache"
    ram_gib = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    print(
        f"{platform.node()}: {os.cpu_count()} cpus, {ram_gib:.0f} GiB RAM, Linux {platform.release()}, Python {platform.python_version()}, scratch {scratch}"
    )
    try:
        started = time.perf_counter()
        paths = make_checkpoint(cache_root, int(args.size_gb * 1e9), int(args.shard_gb * 1e9))
        total = sum(path.stat().st_size for path in paths)
        print(f"wrote {len(paths)} files, {total / 1e9:.2f} GB in {time.perf_counter() - started:.1f}s")
        compare(paths, cache_root, scratch / "state", args.rounds)
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
