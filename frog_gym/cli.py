"""The ``frog-gym`` command line. Each subcommand is a module in :mod:`frog_gym.commands`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from frog_gym import __version__
from frog_gym.commands import COMMANDS
from frog_gym.errors import FrogGymError, UsageError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="frog-gym", description="Executable SWE environments for coding agents.")
    parser.add_argument("--version", action="version", version=f"frog-gym {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        mod = importlib.import_module(module)
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.configure(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except UsageError as e:
        print(f"frog-gym {args.command}: error: {e}", file=sys.stderr)
        return 2
    except FrogGymError as e:
        print(f"frog-gym {args.command}: error: {e}", file=sys.stderr)
        return getattr(e, "exit_code", 1)
    except KeyboardInterrupt:
        print(f"frog-gym {args.command}: interrupted", file=sys.stderr)
        return 130
    except OSError as e:  # a path the command could not use: one line that names it, never a traceback
        if e.filename is None or os.environ.get("FROG_GYM_DEBUG"):
            raise
        print(f"frog-gym {args.command}: error: cannot use {e.filename}: {e.strerror}. Check the path and its "
              "permissions (FROG_GYM_DEBUG=1 shows the traceback).", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
