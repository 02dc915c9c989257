"""Runs the stack's program for the end-to-end harness's language host (tools/e2e/gomod/pulumi/languagehost).

The host starts this with the project's virtualenv and the engine's settings as flags; the stack's config
arrives in PULUMI_CONFIG / PULUMI_CONFIG_SECRET_KEYS. A `pulumi.RunError` (the program's one-line input
errors) is printed once and exits 32, which tells the host the user has seen the error; anything else
prints its traceback and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import runpy
import sys
import traceback

import pulumi
import pulumi.runtime

USER_SAW_ERROR = 32


def _run(program: str) -> None:
    runpy.run_path(program, run_name="__main__")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    for flag in ("monitor", "engine", "project", "stack", "organization", "root", "pwd", "dry-run", "parallel"):
        parser.add_argument(f"--{flag}", default="")
    parser.add_argument("program")
    args = parser.parse_args()
    pulumi.runtime.set_all_config(pulumi.runtime.get_config_env(), pulumi.runtime.get_config_secret_keys_env())
    pulumi.runtime.configure(
        pulumi.runtime.Settings(
            project=args.project,
            stack=args.stack,
            monitor=args.monitor,
            engine=args.engine,
            parallel=int(args.parallel or 0) or None,
            dry_run=args.dry_run == "true",
            organization=args.organization or None,
            root_directory=args.root or None,
        )
    )
    if args.pwd:
        os.chdir(args.pwd)
    program = os.path.abspath(args.program)
    if os.path.isdir(program):
        program = os.path.join(program, "__main__.py")
    sys.path.insert(0, os.path.dirname(program))
    sys.argv = [program]
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(pulumi.runtime.run_in_stack(lambda: _run(program)))
    except pulumi.RunError as error:
        print(f"error: {error}", file=sys.stderr)
        return USER_SAW_ERROR
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
