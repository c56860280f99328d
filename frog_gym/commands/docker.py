"""``frog-gym docker``: build, list and prune the docker backend's images and containers.

``build REPO|--all`` builds images from the registry specs with no registry access (see
:mod:`frog_gym.sandbox.images`); ``images`` lists them with their ids; ``prune`` removes containers
whose owner process is gone (``--all``: every frog-gym container; ``--images``: outdated images too).
"""

from __future__ import annotations

import argparse
import json
import time

HELP = "Build and list the docker backend's images; remove leftover containers (frog-gym docker prune)."


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="build the image of a repository (base plus its venv), or of every one")
    b.add_argument("repo", nargs="?", help="registry name (see `frog-gym tasks`)")
    b.add_argument("--all", action="store_true", help="every registered repository")
    b.add_argument("--base", action="store_true", help="only the shared base image")
    b.add_argument("--force", action="store_true", help="rebuild even when an image of the same content exists")
    i = sub.add_parser("images", help="list frog-gym's images with their ids")
    i.add_argument("--json", action="store_true", help="one JSON object per line")
    pr = sub.add_parser("prune", help="remove containers left by frog-gym processes that are gone")
    pr.add_argument("--all", action="store_true", help="every frog-gym container, running or not")
    pr.add_argument("--images", action="store_true", help="also images no current build uses")


def run(args: argparse.Namespace) -> int:
    from frog_gym.errors import FrogGymError
    from frog_gym.sandbox import images

    client = images.docker_client()
    if args.action == "build":
        if args.base:
            names: list[str] = []
        elif args.all:
            from frog_gym.catalog.spec import repo_names

            names = sorted(repo_names())
        elif args.repo:
            names = [args.repo]
        else:
            raise FrogGymError("Say which image to build: `frog-gym docker build REPO`, `--all` or `--base`.")
        start = time.monotonic()
        tag, hit = images.build_base(client, force=args.force)
        print(f"{tag:44} {'cached' if hit else 'built'} {time.monotonic() - start:6.1f} s")
        from frog_gym.catalog.snapshot import prepare
        from frog_gym.catalog.spec import load_repo

        for name in names:
            start = time.monotonic()
            tag, hit = images.build_repo_image(prepare(load_repo(name)), client, force=args.force)
            print(f"{tag:44} {'cached' if hit else 'built'} {time.monotonic() - start:6.1f} s")
        return 0
    if args.action == "images":
        for row in images.list_images(client):
            if args.json:
                print(json.dumps(row))
            else:
                print(f"{row['tag']:44} {row['kind']:5} {row['id'][:19]:20} {row['size'] / 1e6:7.1f} MB")
        return 0
    from frog_gym.sandbox.docker import prune

    for name in prune(client, everything=args.all):
        print(f"removed container {name}")
    if args.images:
        for tag in images.prune_images(client):
            print(f"removed image {tag}")
    return 0
