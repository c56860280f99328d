"""Docker images for the docker backend, built locally from the host: no registry is needed.

Two layers, each tagged by a hash of its content, so a rebuild of unchanged content is a cache hit:

- ``frog-gym-base:<hash>``: a root filesystem made from the host's own system programs (bash, coreutils,
  git, procps, ... with the shared libraries they load) and the Python installation the venvs were built
  from, at its original path. It is written as a tar in a few seconds and loaded with ``docker import``.
- ``frog-gym-<repo>:<hash>``: the base plus the repository's venv at its original path (the venv's scripts
  and ``pyvenv.cfg`` hard-code it), built with the classic builder (one ``COPY``), so every repository
  shares the base layer. The workspace is not in the image: the sandbox bind-mounts it at ``/testbed``.

The hash is over what goes in (paths, sizes, modification times, modes, link targets, and the venv's
:func:`~frog_gym.catalog.snapshot.venv_key`), not over the built image, whose id also covers a creation time.
:func:`image_digest` gives the built image's id for the harness spec.

Example:
    >>> from frog_gym.catalog.snapshot import prepare
    >>> from frog_gym.catalog.spec import load_repo
    >>> tag = image_for(prepare(load_repo("inflection")))  # doctest: +SKIP
    >>> tag.startswith("frog-gym-inflection:")  # doctest: +SKIP
    True
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock

from frog_gym import paths
from frog_gym.errors import SandboxError, SandboxUnavailableError

if TYPE_CHECKING:
    from frog_gym.catalog.snapshot import PreparedRepo

RECIPE = 1
"""Bumped whenever what goes into an image changes in a way the content hash cannot see."""

SANDBOX_UID = 65534
CI_SOCKET = "/run/frog-gym-docker/docker.sock"
"""Where ``.ci/docker.sh start`` puts its engine's socket; used when DOCKER_HOST is unset."""
PACKAGES = ("base-files", "bash", "dash", "coreutils", "debianutils", "diffutils", "findutils", "gawk", "mawk",
            "git", "grep", "gzip", "less", "libc-bin", "libc6", "ncurses-base", "patch", "procps", "sed", "tar",
            "util-linux", "xz-utils")
"""Debian packages whose files form the base's system part (where the host has dpkg)."""

COMMANDS = ("bash", "sh", "env", "ls", "cat", "cp", "mv", "rm", "mkdir", "rmdir", "ln", "chmod", "touch", "head",
            "tail", "wc", "sort", "uniq", "cut", "tr", "tee", "echo", "printf", "sleep", "timeout", "true", "false",
            "test", "pwd", "id", "whoami", "dirname", "basename", "readlink", "realpath", "date", "du", "df",
            "stat", "xargs", "find", "grep", "egrep", "sed", "awk", "diff", "patch", "git", "tar", "gzip", "less",
            "ps", "kill", "pkill", "pgrep", "setsid", "nproc", "uname", "seq", "expr", "mktemp", "which")
"""Commands copied (with their libraries) where the host has no dpkg."""

_SKIP_PREFIXES = ("/usr/share/doc", "/usr/share/man", "/usr/share/info", "/usr/share/locale", "/usr/share/lintian",
                  "/usr/lib/x86_64-linux-gnu/gconv", "/usr/share/bash-completion")
_PY_SKIP = {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip",
            "pydoc_data"}
_ETC_COPY = ("nsswitch.conf", "ld.so.cache", "ld.so.conf", "protocols", "services", "mime.types")
_DIRS = {"/tmp": 0o1777, "/var/tmp": 0o1777, "/testbed": 0o755, "/proc": 0o555, "/sys": 0o555, "/dev": 0o755,
         "/run": 0o755, "/home": 0o755, "/root": 0o755, "/etc": 0o755, "/var": 0o755, "/frog": 0o755}
_INSTALL_HINT = ("The docker backend needs the Docker SDK: pip install 'frog-gym[docker]'.")


def docker_client() -> Any:
    """A client of the engine at ``DOCKER_HOST`` (else the default socket, else :data:`CI_SOCKET`), or an
    error that says what to do."""
    try:
        import docker
    except ImportError as e:
        raise SandboxUnavailableError(_INSTALL_HINT) from e
    where = os.environ.get("DOCKER_HOST") or next(
        (f"unix://{s}" for s in ("/var/run/docker.sock", CI_SOCKET) if os.path.exists(s)), "unix:///var/run/docker.sock")
    try:
        client = docker.DockerClient(base_url=where, version="auto", timeout=120)
        client.ping()
    except Exception as e:
        raise SandboxUnavailableError(
            f"No Docker engine answers at {where} ({type(e).__name__}: {str(e)[:200]}). Start one (for example "
            "`bash .ci/docker.sh start`, which prints the DOCKER_HOST to export) or set DOCKER_HOST.") from e
    return client


# -- the base root filesystem ------------------------------------------------------------------------
@dataclass(frozen=True)
class _Entry:
    """One member of the root filesystem: a host path copied as it is, or a synthetic file or folder."""

    arcname: str
    source: str | None = None
    data: bytes | None = None
    mode: int = 0o644
    """-1: a symbolic link to ``data``."""


def _canonical(path: str) -> str:
    """``path`` with its parent folders resolved (so /bin/bash and /usr/bin/bash on a merged /usr agree)."""
    parent, name = os.path.split(path)
    return os.path.join(_realdir(parent), name)


@lru_cache(maxsize=4096)
def _realdir(path: str) -> str:
    return os.path.realpath(path)


def _is_elf(path: str) -> bool:
    if ".so" not in os.path.basename(path) and not os.stat(path).st_mode & 0o111:
        return False
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _package_files() -> list[str]:
    if not shutil.which("dpkg-query"):
        return [p for c in COMMANDS if (p := shutil.which(c))]
    names = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\n", *PACKAGES], capture_output=True,
                           text=True).stdout.split()
    out = subprocess.run(["dpkg-query", "-L", *names], capture_output=True, text=True).stdout.splitlines()
    return [p for p in out if p.startswith("/") and not p.startswith(_SKIP_PREFIXES)]


def _python_files() -> list[str]:
    """The interpreter the venvs were made from, without its site-packages and tests."""
    prefix = os.path.realpath(sys.base_prefix)
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    files = [sys._base_executable if hasattr(sys, "_base_executable") else sys.executable]  # type: ignore[attr-defined]
    files += [os.path.join(sys.base_prefix, "bin", n) for n in (ver, "python3", "python")]
    files += [str(p) for p in Path(prefix, "lib").glob("libpython*")]
    lib = Path(prefix, "lib", ver)
    for dirpath, dirnames, filenames in os.walk(lib):
        rel = os.path.relpath(dirpath, lib)
        if rel == ".":
            dirnames[:] = [d for d in dirnames if d not in _PY_SKIP and not d.startswith("config-")]
        files += [os.path.join(dirpath, f) for f in filenames]
        files += [os.path.join(dirpath, d) for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
    files.append(str(lib / "site-packages"))
    return files


def _libraries(elves: list[str]) -> list[str]:
    """The shared libraries ``elves`` load, as ``ldd`` resolves them (remembered per file and mtime, since
    ``ldd`` runs the loader once per file: seconds for a few hundred)."""
    cache_file = paths.home() / "docker" / "ldd.json"
    try:
        cache: dict[str, list[str]] = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        cache = {}
    keys: dict[str, str] = {}
    todo: list[str] = []
    inodes: dict[tuple[int, int], str] = {}
    for p in elves:
        st = os.stat(p)
        keys[p] = f"{p}\0{st.st_size}\0{st.st_mtime_ns}"
        if keys[p] not in cache and inodes.setdefault((st.st_dev, st.st_ino), p) == p:
            todo.append(p)
    for i in range(0, len(todo), 100):
        chunk = todo[i:i + 100]
        proc = subprocess.run(["ldd", *chunk, *chunk[:1]], capture_output=True, text=True)  # 2+: headers
        current: list[str] = []
        for line in proc.stdout.splitlines():
            parts = line.split()
            if not line.startswith(("\t", " ")) and line.endswith(":") and line[:-1] in keys:
                current = cache.setdefault(keys[line[:-1]], [])
            elif "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
                current.append(parts[2])
            elif parts and parts[0].startswith("/") and "(0x" in line:
                current.append(parts[0])
    for p in elves:  # hard links share their first name's answer
        st = os.stat(p)
        first = inodes.get((st.st_dev, st.st_ino), p)
        cache.setdefault(keys[p], cache.get(keys[first], []))
    cache_file.parent.mkdir(exist_ok=True)
    tmp = cache_file.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(cache))
    os.replace(tmp, cache_file)
    return sorted({lib for p in elves for lib in cache[keys[p]]})


def _passwd() -> list[_Entry]:
    return [_Entry("etc/passwd", data=(f"root:x:0:0:root:/root:/bin/bash\nfrog:x:{SANDBOX_UID}:{SANDBOX_UID}:"
                                       "frog-gym:/tmp:/bin/bash\n").encode()),
            _Entry("etc/group", data=f"root:x:0:\nfrog:x:{SANDBOX_UID}:\n".encode()),
            _Entry("etc/hostname", data=b"sandbox\n")]


@lru_cache(maxsize=1)
def rootfs_entries() -> tuple[_Entry, ...]:
    """Every member of the base root filesystem, sorted (computed once per process, about a second)."""
    wanted: dict[str, _Entry] = {}

    def add(path: str, depth: int = 0) -> None:
        path = _canonical(os.path.normpath(path))
        if path in ("/", "") or path.lstrip("/") in wanted or depth > 20:
            return
        try:
            st = os.lstat(path)
        except OSError:
            return
        if stat.S_ISDIR(st.st_mode):
            return  # folders come from their files' parents
        wanted[path.lstrip("/")] = _Entry(path.lstrip("/"), source=path)
        if stat.S_ISLNK(st.st_mode):  # keep the whole chain (/usr/bin/awk -> /etc/alternatives/awk -> mawk)
            add(os.path.join(os.path.dirname(path), os.readlink(path)), depth + 1)

    for p in _package_files() + _python_files():
        add(p)
    for name in _ETC_COPY:
        add(f"/etc/{name}")
    for conf in Path("/etc/ld.so.conf.d").glob("*.conf"):
        add(str(conf))
    elves = [e.source for e in wanted.values() if e.source and not os.path.islink(e.source) and _is_elf(e.source)]
    for lib in _libraries(sorted(elves)):
        add(lib)
    for d in ("/usr/bin", "/usr/sbin"):  # alternatives (awk, pager, ...) are links dpkg does not list
        for name in os.listdir(d):
            p = os.path.join(d, name)
            if os.path.islink(p) and os.readlink(p).startswith("/etc/alternatives/") and \
                    os.path.realpath(p).lstrip("/") in wanted:
                add(p)
    for e in _passwd():
        wanted[e.arcname] = e
    py = os.path.join(sys.base_prefix, "bin", f"python{sys.version_info.major}.{sys.version_info.minor}")
    for name in ("python3", "python"):  # as the host's python3 is on the local backend's PATH
        wanted[f"usr/local/bin/{name}"] = _Entry(f"usr/local/bin/{name}", data=py.encode(), mode=-1)
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        if os.path.islink(f"/{top}"):
            wanted[top] = _Entry(top, source=f"/{top}")
    folders: dict[str, _Entry] = {d.lstrip("/"): _Entry(d.lstrip("/"), mode=m) for d, m in _DIRS.items()}
    for name in list(wanted):
        parent = os.path.dirname(name)
        while parent and parent not in folders and parent not in wanted:
            folders[parent] = _Entry(parent, mode=0o755)
            parent = os.path.dirname(parent)
    folders.update(wanted)
    return tuple(sorted(folders.values(), key=lambda e: e.arcname))


def _fingerprint(entries: tuple[_Entry, ...]) -> str:
    h = hashlib.sha256(f"frog-gym-base {RECIPE}\n".encode())
    for e in entries:
        if e.arcname.endswith(".pyc"):
            continue  # Python writes missing bytecode of its own library on first import; no new image for it
        if e.source is not None:
            st = os.lstat(e.source)
            link = os.readlink(e.source) if stat.S_ISLNK(st.st_mode) else ""
            h.update(f"{e.arcname}\0{st.st_mode:o}\0{st.st_size}\0{st.st_mtime_ns}\0{link}\n".encode())
        else:
            h.update(f"{e.arcname}\0{e.mode:o}\0".encode() + hashlib.sha256(e.data or b"").digest() + b"\n")
    return h.hexdigest()[:16]


def base_tag() -> str:
    """The tag of the base image for this host's system and Python (whether built yet or not)."""
    return f"frog-gym-base:{_fingerprint(rootfs_entries())}"


def write_rootfs(out: io.BufferedIOBase | Any) -> None:
    """Write the base root filesystem as an uncompressed tar to ``out`` (members sorted, owned by root)."""
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.GNU_FORMAT) as tar:
        seen: dict[tuple[int, int], str] = {}
        for e in rootfs_entries():
            if e.source is None:
                info = tarfile.TarInfo(e.arcname)
                info.mode = e.mode
                if e.mode == -1:  # a synthetic symbolic link to ``data``
                    info.type, info.linkname, info.mode = tarfile.SYMTYPE, (e.data or b"").decode(), 0o777
                    tar.addfile(info)
                elif e.data is None:
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                else:
                    info.size = len(e.data)
                    tar.addfile(info, io.BytesIO(e.data))
                continue
            st = os.lstat(e.source)
            info = tarfile.TarInfo(e.arcname)
            info.mode, info.mtime = stat.S_IMODE(st.st_mode), int(st.st_mtime)
            if stat.S_ISLNK(st.st_mode):
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(e.source)
                tar.addfile(info)
            elif stat.S_ISREG(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if st.st_nlink > 1 and key in seen:  # git's dozens of hard-linked helpers are stored once
                    info.type, info.linkname = tarfile.LNKTYPE, seen[key]
                    tar.addfile(info)
                    continue
                seen[key] = e.arcname
                info.size = st.st_size
                try:
                    with open(e.source, "rb") as f:
                        tar.addfile(info, f)
                except PermissionError:
                    continue


# -- building ----------------------------------------------------------------------------------------
def _lock(name: str) -> FileLock:
    d = paths.home() / "locks"
    d.mkdir(exist_ok=True)
    return FileLock(str(d / f"docker-{name}.lock"))


def _exists(client: Any, tag: str) -> bool:
    import docker

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_base(client: Any | None = None, force: bool = False) -> tuple[str, bool]:
    """Build the base image unless an image of the same content exists; returns ``(tag, cache_hit)``."""
    client = client or docker_client()
    tag = base_tag()
    if not force and _exists(client, tag):
        return tag, True
    with _lock("base"):
        if not force and _exists(client, tag):
            return tag, True
        repo, version = tag.split(":")
        changes = ["LABEL frog-gym=1", "LABEL frog-gym.kind=base", f"LABEL frog-gym.key={version}",
                   "ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8", "WORKDIR /testbed"]
        with tempfile.TemporaryFile(dir=paths.home()) as f:
            write_rootfs(f)
            f.seek(0)
            result = client.api.import_image(src=f, repository=repo, tag=version, changes=changes)
        if not _exists(client, tag):
            raise SandboxError(f"docker import of the base image {tag} failed: {str(result)[:500]}")
        return tag, False


def repo_tag(repo: PreparedRepo) -> str:
    """The tag of ``repo``'s image: a hash of the base's tag, the venv's key and the venv's path."""
    from frog_gym.catalog.snapshot import venv_key

    h = hashlib.sha256(f"{RECIPE}\0{base_tag()}\0{venv_key(repo.spec)}\0{repo.venv}".encode()).hexdigest()[:16]
    return f"frog-gym-{repo.spec.name}:{h}"


def build_repo_image(repo: PreparedRepo, client: Any | None = None, force: bool = False) -> tuple[str, bool]:
    """Build ``repo``'s image (the base plus its venv) unless it exists; returns ``(tag, cache_hit)``."""
    client = client or docker_client()
    tag = repo_tag(repo)
    if not force and _exists(client, tag):
        return tag, True
    base, _ = build_base(client)
    with _lock(f"repo-{repo.spec.name}"):
        if not force and _exists(client, tag):
            return tag, True
        venv = str(repo.venv)
        dockerfile = f"FROM {base}\nCOPY venv/ {json.dumps(venv)}\n".encode()
        labels = {"frog-gym": "1", "frog-gym.kind": "repo", "frog-gym.repo": repo.spec.name,
                  "frog-gym.key": tag.split(":")[1], "frog-gym.base": base, "frog-gym.venv": venv}
        with tempfile.TemporaryFile(dir=paths.home()) as ctx:
            with tarfile.open(fileobj=ctx, mode="w") as tar:
                info = tarfile.TarInfo("Dockerfile")
                info.size = len(dockerfile)
                tar.addfile(info, io.BytesIO(dockerfile))
                tar.add(venv, arcname="venv", filter=lambda t: None if t.name.endswith("frog-build.log") else t)
            ctx.seek(0)
            try:
                client.images.build(fileobj=ctx, custom_context=True, tag=tag, labels=labels, rm=True,
                                    forcerm=True, pull=False, network_mode="none")
            except Exception as e:
                raise SandboxError(f"building the image {tag} of '{repo.spec.name}' failed: {e}") from e
        return tag, False


def image_for(repo: PreparedRepo | None, client: Any | None = None) -> str:
    """The image a sandbox for ``repo`` runs (the base when ``repo`` is None), built on first use."""
    if repo is None:
        return build_base(client)[0]
    return build_repo_image(repo, client)[0]


def image_digest(repo: PreparedRepo | str | None, client: Any | None = None) -> str:
    """The id (``sha256:...``) of the image that runs ``repo`` (a prepared repository, a registry name, an
    image name, or None for the base), building it if needed; the harness spec records it."""
    client = client or docker_client()
    if isinstance(repo, str):
        if ":" in repo or "/" in repo:
            return str(client.images.get(repo).id)
        from frog_gym.catalog.snapshot import prepare
        from frog_gym.catalog.spec import load_repo

        repo = prepare(load_repo(repo))
    return str(client.images.get(image_for(repo, client)).id)


def list_images(client: Any | None = None) -> list[dict[str, Any]]:
    """frog-gym's images on the engine: tag, kind, repository, id and size, sorted by tag."""
    client = client or docker_client()
    rows = []
    for img in client.images.list(filters={"label": "frog-gym=1"}):
        labels = img.labels or {}
        for tag in img.tags or ["<none>"]:
            rows.append({"tag": tag, "kind": labels.get("frog-gym.kind", ""), "repo": labels.get("frog-gym.repo", ""),
                         "id": img.id, "digests": list(img.attrs.get("RepoDigests") or []),
                         "size": int(img.attrs.get("Size", 0)), "created": img.attrs.get("Created", "")})
    return sorted(rows, key=lambda r: r["tag"])


def prune_images(client: Any | None = None) -> list[str]:
    """Remove frog-gym images that nothing current builds on: bases of an older host state, and
    repository images on such a base. Returns the tags removed."""
    import docker

    client = client or docker_client()
    current = base_tag()
    removed = []
    for row in list_images(client):
        if row["kind"] == "base":
            keep = row["tag"] == current
        else:
            keep = row["kind"] != "repo" or client.images.get(row["id"]).labels.get("frog-gym.base") == current
        if not keep:
            try:
                client.images.remove(row["tag"] if row["tag"] != "<none>" else row["id"], noprune=False)
                removed.append(row["tag"])
            except docker.errors.APIError:  # a container still uses it
                pass
    return removed
