"""``frog-gym setup``: make this machine ready to run episodes (today: install bubblewrap where it is missing).

On Debian and Ubuntu it installs the ``bubblewrap`` package with ``apt-get``: directly as root (a root
shell in a container often has no ``sudo``), through ``sudo`` otherwise. Elsewhere it says what to
install. Then it checks that ``bwrap`` can start a sandbox here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

HELP = (
    "Install what the sandbox needs (bubblewrap, via apt-get as root or with sudo) and check that it works."
)

APT = (
    ["apt-get", "update", "-qq"],
    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "bubblewrap"],
)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="print the commands it would run, run nothing")


def install_commands(is_root: bool, sudo: str | None, apt_get: str | None) -> list[list[str]]:
    """The commands that install bubblewrap here, or an empty list when none can.

    >>> install_commands(True, None, "/usr/bin/apt-get")[1][:2]
    ['apt-get', 'install']
    >>> install_commands(False, "/usr/bin/sudo", "/usr/bin/apt-get")[0][:2]
    ['sudo', 'apt-get']
    >>> install_commands(False, None, "/usr/bin/apt-get"), install_commands(True, None, None)
    ([], [])
    """
    if apt_get is None or (not is_root and sudo is None):
        return []
    return [(["sudo"] if not is_root else []) + list(c) for c in APT]


def _bwrap_works(bwrap: str) -> str:
    """An empty string when bubblewrap starts a sandbox here, else its complaint."""
    proc = subprocess.run(
        [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return "" if proc.returncode == 0 else (proc.stderr.strip() or f"exit code {proc.returncode}")


def run(args: argparse.Namespace) -> int:
    from frog_gym.errors import FrogGymError

    bwrap = shutil.which("bwrap")
    if bwrap is None:
        commands = install_commands(os.geteuid() == 0, shutil.which("sudo"), shutil.which("apt-get"))
        if not commands:
            raise FrogGymError(
                "bubblewrap (bwrap) is missing and cannot be installed from here: "
                + (
                    "you are not root and there is no sudo; ask an administrator to run "
                    "`apt-get install bubblewrap`"
                    if shutil.which("apt-get")
                    else "this is not a Debian/Ubuntu system; install the 'bubblewrap' package with your package "
                    "manager (dnf, pacman, zypper, apk)"
                )
                + ", then run `frog-gym setup` again."
            )
        for c in commands:
            print("frog-gym setup: " + " ".join(c), file=sys.stderr)
            if not args.dry_run:
                subprocess.run(c, check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if args.dry_run:
            return 0
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise FrogGymError("apt-get finished but no bwrap is on PATH; check the output above.")
    problem = _bwrap_works(bwrap)
    if problem:
        raise FrogGymError(
            f"bubblewrap is installed ({bwrap}) but cannot start a sandbox here: {problem}. In a "
            "container, allow user namespaces (e.g. docker run --security-opt seccomp=unconfined) "
            "or see the README's Safety section for FROG_GYM_UNSANDBOXED."
        )
    print(f"frog-gym setup: bubblewrap works ({bwrap}); ready.")
    return 0
