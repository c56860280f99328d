"""The package index client of the miner: a project's releases with their sdists (PEP 691 JSON), and an
sdist fetched into the cache pinned by the sha256 the index lists.

Example:
    >>> Release("1.0", "x-1.0.tar.gz", "https://example.org/x-1.0.tar.gz", "0" * 64, "2025-01-01").version
    '1.0'
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import urllib.request
from dataclasses import dataclass

from packaging.utils import parse_sdist_filename
from packaging.version import InvalidVersion, Version

from frog_gym import paths
from frog_gym.catalog.live import release_spec
from frog_gym.catalog.snapshot import sha256_file
from frog_gym.catalog.spec import RepoSpec

DEFAULT_INDEX = "https://pypi.org/simple"


@dataclass(frozen=True)
class Release:
    """One release's source distribution as the index lists it."""

    version: str
    filename: str
    url: str
    sha256: str
    uploaded: str
    """ISO time of the upload (the release date)."""
    requires_python: str = ""


def index_url() -> str:
    """The package index pip is configured with (``PIP_INDEX_URL``, pip's config), else PyPI."""
    url = os.environ.get("PIP_INDEX_URL", "")
    if not url:
        import subprocess
        import sys

        proc = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.index-url"],
                              capture_output=True, text=True)
        url = proc.stdout.strip() if proc.returncode == 0 else ""
    return (url or DEFAULT_INDEX).rstrip("/")


def _ssl() -> ssl.SSLContext:
    cafile = os.environ.get("PIP_CERT") or None
    return ssl.create_default_context(cafile=cafile if cafile and os.path.exists(cafile) else None)


def list_releases(project: str, index: str | None = None) -> list[Release]:
    """Final releases of ``project`` with an sdist, oldest first (PEP 691 JSON from the index).

    Raises:
        OSError: the index cannot be reached.
    """
    url = f"{index or index_url()}/{project}/"
    req = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60, context=_ssl()) as r:
        data = json.loads(r.read())
    best: dict[Version, Release] = {}
    for f in data.get("files", []):
        name = f["filename"]
        if f.get("yanked") or not name.endswith((".tar.gz", ".zip")) or "sha256" not in f.get("hashes", {}):
            continue
        try:
            _, v = parse_sdist_filename(name)
        except (InvalidVersion, ValueError):
            continue
        if v.is_prerelease or v.is_devrelease:
            continue
        rel = Release(str(v), name, f["url"], f["hashes"]["sha256"], f.get("upload-time") or "",
                      f.get("requires-python") or "")
        if v not in best or name.endswith(".tar.gz"):
            best[v] = rel
    return [best[v] for v in sorted(best)]


def fetch_release(spec: RepoSpec, rel: Release) -> RepoSpec:
    """Download ``rel``'s sdist into the sdist cache (verified against the index's sha256) and return the
    spec of that release; the tree is then unpacked by the usual snapshot machinery."""
    cache = paths.home() / "sdists"
    cache.mkdir(exist_ok=True)
    if not any(cache.glob(f"{rel.sha256}.*")):
        tmp = cache / f".{rel.sha256}.{os.getpid()}.part"
        url = rel.url if "://" in rel.url else f"{index_url()}/{spec.source.name}/{rel.url}"
        with urllib.request.urlopen(url, timeout=120, context=_ssl()) as r, open(tmp, "wb") as out:
            shutil.copyfileobj(r, out)
        got = sha256_file(tmp)
        if got != rel.sha256:
            tmp.unlink()
            raise OSError(f"{rel.filename}: sha256 {got} differs from the index's {rel.sha256}")
        os.replace(tmp, cache / f"{rel.sha256}{'.zip' if rel.filename.endswith('.zip') else '.tar.gz'}")
    return release_spec(spec, rel.version, rel.sha256)
