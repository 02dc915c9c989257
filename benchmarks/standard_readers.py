"""The standard tools the prewarm program is measured against, on the same files in the same run:
`vmtouch -t` (touch every page into the page cache; single reader) and `fio`'s best parallel
sequential read over several job counts. Both are Debian packages; `ensure_tools` installs them with
apt-get when they are missing (root only) and stops with a clear message otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

PACKAGES = {"vmtouch": "vmtouch", "fio": "fio"}
FIO_BLOCK_BYTES = 1 << 20


def ensure_tools() -> str:
    """Install the missing tools with apt-get (root only); returns a line saying which versions run and how
    they got here."""
    missing = [tool for tool in PACKAGES if shutil.which(tool) is None]
    if missing and (os.geteuid() != 0 or shutil.which("apt-get") is None):
        raise SystemExit(
            f"missing {', '.join(missing)}: install the Debian packages {', '.join(PACKAGES[t] for t in missing)}"
        )
    if missing:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in (["update"], ["install", "-y", *(PACKAGES[t] for t in missing)]):
            subprocess.run(["apt-get", "-qq", *command], check=True, stdout=subprocess.DEVNULL, env=env)
    versions = [f"{tool} {_version(tool)}" for tool in PACKAGES]
    how = (
        f"installed now by `apt-get install {' '.join(PACKAGES[t] for t in missing)}`"
        if missing
        else "already installed"
    )
    return f"standard tools: {', '.join(versions)} ({how})"


def _version(tool: str) -> str:
    """The Debian package's version when dpkg knows the tool, else what the tool says of itself."""
    done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", PACKAGES[tool]], capture_output=True, text=True)
    if done.returncode == 0 and done.stdout:
        return done.stdout
    flag = "--version" if tool == "fio" else "-h"
    return subprocess.run([tool, flag], capture_output=True, text=True).stdout.splitlines()[0].strip()


def vmtouch_touch(files: list[Path]) -> int:
    """`vmtouch -t` the files (`-m` lifts its 500 MB per-file default limit); returns the bytes touched."""
    subprocess.run(["vmtouch", "-t", "-q", "-m", "64G", *map(str, files)], check=True)
    return sum(f.stat().st_size for f in files)


def fio_slices(size: int, jobs: int) -> list[tuple[int, int, int]]:
    """(offset, length, block size) per concurrent fio job: `jobs` slices of whole 1 MiB blocks, plus the
    trailing partial block as its own slice (fio neither reads a partial block nor, read-only, past EOF)."""
    whole = size // FIO_BLOCK_BYTES
    parallel = max(1, min(jobs, whole))
    per_job = -(-whole // parallel)
    slices = [
        (i * per_job * FIO_BLOCK_BYTES, min(per_job, whole - i * per_job) * FIO_BLOCK_BYTES, FIO_BLOCK_BYTES)
        for i in range(parallel)
        if whole - i * per_job > 0
    ]
    if size % FIO_BLOCK_BYTES:
        slices.append((whole * FIO_BLOCK_BYTES, size % FIO_BLOCK_BYTES, size % FIO_BLOCK_BYTES))
    return slices


def fio_job_file(files: list[Path], jobs: int) -> str:
    """One job per slice; `stonewall` on a file's first slice runs the files one after another, so at
    most `jobs` (+1 for a trailing partial block) readers are in flight, like the raw parallel read."""
    sections = ["[global]", "rw=read", "ioengine=psync", "direct=0", "invalidate=0"]
    for index, path in enumerate(files):
        name = str(path).replace(":", "\\:")
        for part, (offset, length, block) in enumerate(fio_slices(path.stat().st_size, jobs)):
            sections += [
                f"[file{index}-{part}]",
                f"filename={name}",
                f"offset={offset}",
                f"size={length}",
                f"bs={block}",
            ]
            sections += ["stonewall"] if part == 0 else []
    return "\n".join(sections) + "\n"


def fio_read(files: list[Path], jobs: int) -> tuple[float, float, int]:
    """(fio's seconds, wall-clock seconds, bytes). fio's own clock is the sum of its groups' run times,
    which leaves out fio's start-up and teardown (~0.5 s here): the comparison most favourable to fio."""
    with tempfile.NamedTemporaryFile("w", suffix=".fio", delete=False) as job:
        job.write(fio_job_file(files, jobs))
    started = time.perf_counter()
    try:
        done = subprocess.run(
            ["fio", "--readonly", "--output-format=json", "--warnings-fatal", job.name],
            check=True,
            capture_output=True,
            text=True,
        )
    finally:
        os.unlink(job.name)
    wall = time.perf_counter() - started
    report = json.loads(done.stdout[done.stdout.index("{") :])  # fio may print a notice before the JSON
    num_bytes = sum(job["read"]["io_bytes"] for job in report["jobs"])
    expected = sum(f.stat().st_size for f in files)
    if num_bytes != expected:
        raise SystemExit(f"fio read {num_bytes} bytes, expected {expected}: the job file is wrong")
    # Jobs of one stonewall group run together: a group lasts as long as its slowest job.
    groups: dict[int, float] = {}
    for job in report["jobs"]:
        group = int(job["jobname"].split("-")[0].removeprefix("file"))
        groups[group] = max(groups.get(group, 0.0), job["read"]["runtime"] / 1000)
    return sum(groups.values()), wall, num_bytes
