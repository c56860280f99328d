"""Repository snapshots and their venvs, content-addressed under ``$FROG_GYM_HOME``.

``prepare(spec)`` fetches the pinned source (pip is the only network user), refuses a hash mismatch,
unpacks it once, builds one venv per (repository, lock, Python) and returns a :class:`PreparedRepo`.
Every step is idempotent and guarded by a file lock, so concurrent processes share the work safely.

The package under test is imported from the episode's workspace, not from site-packages: the venv gets
the package's metadata and dependencies, its own modules are removed, and a ``.pth`` file points at the
workspace mount (``/testbed`` plus the spec's ``import_paths``). So an agent's edit takes effect at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from filelock import FileLock
from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

from frog_gym import paths
from frog_gym.errors import HashMismatchError, OfflineError, SourceError
from frog_gym.catalog.spec import RepoSpec, check_python

TESTBED = "/testbed"
"""Where the repository appears inside every sandbox."""

_DONE = ".frog-complete"
PIP_RUNS: Counter[str] = Counter()
"""How many pip subprocesses ran, by purpose (``download``, ``install``, ...): tests assert cache hits."""
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "frog-gym",
            "GIT_AUTHOR_EMAIL": "frog-gym@localhost", "GIT_COMMITTER_NAME": "frog-gym",
            "GIT_COMMITTER_EMAIL": "frog-gym@localhost", "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}


@dataclass(frozen=True)
class PreparedRepo:
    """A repository ready for episodes: its pristine tree and its venv (both read-only by convention)."""

    spec: RepoSpec
    tree: Path
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _lock(name: str) -> FileLock:
    d = paths.home() / "locks"
    d.mkdir(exist_ok=True)
    return FileLock(str(d / f"{name}.lock"))


def _tail(text: str, n: int = 40) -> str:
    return "\n".join(text.splitlines()[-n:])


def fetch_sdist(spec: RepoSpec) -> Path:
    """The verified sdist archive of a pypi spec, downloaded with pip on first use.

    Raises:
        OfflineError: the archive is not cached and FROG_GYM_OFFLINE=1.
        HashMismatchError: the downloaded file's sha256 differs from the spec's.
    """
    src = spec.source
    cache = paths.home() / "sdists"
    cache.mkdir(exist_ok=True)
    for p in cache.glob(f"{src.sha256}.*"):
        return p
    with _lock(f"sdist-{src.sha256[:16]}"):
        for p in cache.glob(f"{src.sha256}.*"):
            return p
        if paths.offline():
            raise OfflineError(
                f"FROG_GYM_OFFLINE=1 but the source of '{spec.name}' ({src}, sha256 {src.sha256[:16]}...) is not "
                f"in the cache {cache}. Run once with network (unset FROG_GYM_OFFLINE), or copy the archive "
                f"there as {src.sha256}.tar.gz.")
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            archive = download_sdist(src.name, src.version, Path(tmp))
            got = sha256_file(archive)
            if got != src.sha256:
                raise HashMismatchError(
                    f"{spec.path}: source.sha256 does not match the downloaded {archive.name}: the spec pins "
                    f"{src.sha256}, the file has {got}. The release may have been replaced, or the spec is "
                    f"wrong; check the file, then update source.sha256 (frog-gym registry add recomputes it).")
            suffix = ".zip" if archive.name.endswith(".zip") else ".tar.gz"
            dest = cache / f"{src.sha256}{suffix}"
            os.replace(archive, dest)
            return dest


def download_sdist(name: str, version: str, dest: Path) -> Path:
    """Download the source distribution of ``name==version`` into ``dest`` with pip; return the file."""
    if paths.offline():
        raise OfflineError(f"FROG_GYM_OFFLINE=1 but the sdist {name}=={version} must be downloaded; "
                           f"run once with network (unset FROG_GYM_OFFLINE).")
    # --no-binary names the project only: ':all:' also reaches the isolated build environment, where a build
    # requirement with no source release pip can build here (isort 9's hatch-mypyc pulls mypy) then fails
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name,
           "--disable-pip-version-check", "-q", "-d", str(dest), f"{name}=={version}"]
    # pip prepares the sdist's metadata (which we discard) before it saves the file: first without build
    # isolation, which is fast when this Python has the build backend; then isolated, which always works
    for attempt in (["--no-build-isolation"], []):
        PIP_RUNS["download"] += 1
        proc = subprocess.run(cmd + attempt, capture_output=True, text=True)
        files = [f for f in dest.iterdir() if f.name.endswith((".tar.gz", ".zip", ".tgz", ".tar.bz2"))]
        if proc.returncode == 0 and files:
            break
    if proc.returncode != 0 or not files:
        raise SourceError(f"pip could not download the sdist {name}=={version} (exit {proc.returncode}); "
                          f"check the name and that this version has a source release:\n{_tail(proc.stderr)}")
    return files[0]


def _unpack(archive: Path, dest: Path) -> None:
    """Extract an sdist, dropping its single top-level folder, refusing unsafe members."""
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        if archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as z:
                for n in z.namelist():
                    if n.startswith("/") or ".." in Path(n).parts:
                        raise SourceError(f"{archive}: unsafe member path {n!r}")
                z.extractall(tmp)
        else:
            with tarfile.open(archive) as t:
                t.extractall(tmp, filter="data")
        entries = list(Path(tmp).iterdir())
        top = entries[0] if len(entries) == 1 and entries[0].is_dir() else Path(tmp)
        staged = dest.parent / f".{dest.name}.staged"
        shutil.rmtree(staged, ignore_errors=True)
        os.replace(top, staged)
        (staged / _DONE).write_text(archive.name)
        os.replace(staged, dest)


def snapshot_tree(spec: RepoSpec) -> Path:
    """The unpacked, pristine tree of a repository (content-addressed by its source key)."""
    dest = paths.home() / "snapshots" / spec.source.key[:24]
    if (dest / _DONE).exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _lock(f"snapshot-{spec.source.key[:16]}"):
        if (dest / _DONE).exists():
            return dest
        if spec.source.kind == "pypi":
            _unpack(fetch_sdist(spec), dest)
        else:
            _checkout_git(spec, dest)
        return dest


SHIPPED = "registry:"
"""Prefix of a git source that names a folder shipped inside the registry package, e.g. ``registry:toy/frogtoy``."""


@contextlib.contextmanager
def _shipped_git(url: str, scratch: Path) -> Iterator[str]:
    """``url`` itself, or for a ``registry:`` source the folder as a one-commit git repository (plain files
    ship in the package; the commit is deterministic, so the spec's ``commit`` pins their content)."""
    if not url.startswith(SHIPPED):
        yield url
        return
    folder = resources.files("frog_gym.registry").joinpath(url[len(SHIPPED):])
    if not folder.is_dir():
        raise SourceError(f"{url}: no such folder in the registry package (frog_gym/registry).")
    with tempfile.TemporaryDirectory(dir=scratch) as tmp, resources.as_file(folder) as src:
        repo = Path(tmp) / "repo"
        shutil.copytree(src, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", _DONE))
        git_commit_tree(repo, "frog-gym shipped source")
        yield str(repo)


def _checkout_git(spec: RepoSpec, dest: Path) -> None:
    src = spec.source
    if paths.offline() and "://" in src.url:
        raise OfflineError(f"FROG_GYM_OFFLINE=1 but '{spec.name}' ({src}) is not in the cache; run once online.")
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp, _shipped_git(src.url, dest.parent) as url:
        env = {**os.environ, **_GIT_ENV}
        for cmd in (["git", "init", "-q", tmp], ["git", "-C", tmp, "fetch", "-q", "--depth=1", url, src.commit],
                    ["git", "-C", tmp, "checkout", "-q", "FETCH_HEAD"]):
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise SourceError(f"{spec.path}: could not fetch {src} ({' '.join(cmd[:4])}...):\n"
                                  f"{_tail(proc.stderr)}")
        head = subprocess.run(["git", "-C", tmp, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        if head != src.commit:
            raise HashMismatchError(f"{spec.path}: source.commit {src.commit} but the fetched tree is at {head}")
        shutil.rmtree(Path(tmp) / ".git")
        staged = dest.parent / f".{dest.name}.staged"
        shutil.rmtree(staged, ignore_errors=True)
        shutil.copytree(tmp, staged, symlinks=True)
        (staged / _DONE).write_text(src.commit)
        os.replace(staged, dest)


def venv_key(spec: RepoSpec) -> str:
    """What the venv depends on: the interpreter, the source, and the install recipe."""
    blob = json.dumps([sys.version, sys.base_prefix, spec.source.key, spec.install.import_paths,
                       spec.install.lock or spec.install.requires, spec.install.install_package,
                       spec.install.steps], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _run_logged(cmd: list[str], log: list[str], what: str, spec: RepoSpec, **kw) -> None:
    if "pip" in cmd[:3]:
        PIP_RUNS["install"] += 1
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    log.append(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        raise SourceError(f"Building the venv of '{spec.name}' failed while {what} (exit {proc.returncode}). "
                          f"Last lines of the build log:\n{_tail(log[-1])}")


def _strip_own_modules(site: Path, dist_name: str) -> None:
    """Remove the package's installed modules (kept: metadata and entry points), so imports hit /testbed."""
    norm = dist_name.lower().replace("-", "_").replace(".", "_")
    for info in site.glob("*.dist-info"):
        if info.name.lower().split("-")[0].replace(".", "_") != norm:
            continue
        record = info / "RECORD"
        for line in record.read_text().splitlines() if record.exists() else []:
            rel = line.split(",")[0]
            if rel.startswith("..") or ".dist-info/" in rel or rel.endswith(".pth"):
                continue
            p = site / rel
            if p.is_file() or p.is_symlink():
                p.unlink()
        if record.exists():  # its sha256 lines would tell an agent which file was mutated, and confirm a fix
            kept = [line for line in record.read_text().splitlines() if ".dist-info/" in line.split(",")[0]]
            record.write_text("".join(f"{line}\n" for line in kept))
        for d in sorted((p for p in site.iterdir() if p.is_dir() and not p.name.endswith(".dist-info")),
                        key=lambda p: p.name):
            if not any(f.is_file() for f in d.rglob("*")):
                shutil.rmtree(d)


_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


def wheelhouse() -> Path:
    """The wheel cache: every locked file by its real name, plus ``by-hash/<sha256>`` naming each one."""
    d = paths.home() / "wheels"
    (d / "by-hash").mkdir(parents=True, exist_ok=True)
    return d


def _store_files(folder: Path) -> dict[str, str]:
    """Move downloaded files into the wheelhouse; return ``{file name: sha256}``."""
    house, out = wheelhouse(), {}
    for f in sorted(folder.iterdir()):
        if f.is_file():
            out[f.name] = sha = sha256_file(f)
            os.replace(f, house / f.name)
            (house / "by-hash" / sha).write_text(f.name)
    return out


def _missing(lock: tuple[str, ...] | list[str]) -> list[str]:
    house = wheelhouse()
    return [line for line in lock if not any((house / "by-hash" / h).exists() for h in _HASH.findall(line))]


def ensure_wheels(lock: tuple[str, ...] | list[str], what: str) -> Path:
    """Put every file of a hashed lock into the wheelhouse (downloaded once; pip checks the hashes).

    Raises:
        OfflineError: some are missing while FROG_GYM_OFFLINE=1; the message lists them.
    """
    if not _missing(lock):
        return wheelhouse()
    with _lock("wheelhouse"):
        missing = _missing(lock)
        if missing and paths.offline():
            raise OfflineError(
                f"FROG_GYM_OFFLINE=1 but {len(missing)} locked requirement(s) of {what} are not in the wheel "
                f"cache {wheelhouse()}: {', '.join(m.split()[0] for m in missing)}. Run once with network "
                f"(unset FROG_GYM_OFFLINE) to download them.")
        if missing:
            with tempfile.TemporaryDirectory(dir=paths.home()) as tmp:
                req = Path(tmp) / "missing.txt"
                req.write_text("\n".join(missing) + "\n")
                (Path(tmp) / "dl").mkdir()
                PIP_RUNS["download"] += 1
                proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--require-hashes",
                                       "--disable-pip-version-check", "-d", f"{tmp}/dl", "-r", str(req)],
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    raise SourceError(f"pip could not download the locked requirements of {what} "
                                      f"(exit {proc.returncode}):\n{_tail(proc.stderr)}")
                _store_files(Path(tmp) / "dl")
    return wheelhouse()


RESOLVE_TTL = 24 * 3600
"""Seconds a resolution of the same requirements (same Python, same source) is reused by resolve_lock."""


def resolve_lock(requires: list[str], tree: Path | None, what: str, key: str = "", release: str = "") -> list[str]:
    """Pin ``requires`` (plus the dependencies of the package at ``tree``) for this interpreter, download
    every pinned file into the wheelhouse and hash it: lines ``name==version --hash=sha256:...``.

    ``release`` (``name==version``), for a PyPI source, resolves the package's dependencies from the
    index's metadata instead of building the tree's; the package itself is left out of the lock.

    ``key`` names the source (its content address); a resolution of the same requirements for the same
    source and Python made within :data:`RESOLVE_TTL` is reused.
    """
    blob = json.dumps([sys.version, sys.platform, sorted(requires), key if tree is not None else ""])
    memo = paths.home() / "resolved" / f"{hashlib.sha256(blob.encode()).hexdigest()[:24]}.json"
    if memo.exists() and time.time() - memo.stat().st_mtime < RESOLVE_TTL:
        lock = json.loads(memo.read_text())
        if not _missing(lock):
            return lock
    if paths.offline():
        raise OfflineError(f"FROG_GYM_OFFLINE=1 but locking the requirements of {what} needs the package index")
    with tempfile.TemporaryDirectory(dir=paths.home()) as tmp:
        report = Path(tmp) / "report.json"
        own = [release] if release and tree is not None else (
            [str(_clean_copy(tree, Path(tmp) / "src"))] if tree is not None else [])
        PIP_RUNS["resolve"] += 1
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q",
                               "--disable-pip-version-check", "--report", str(report), *requires, *own],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SourceError(f"pip could not resolve the requirements of {what} (exit {proc.returncode}):\n"
                              f"{_tail(proc.stderr)}")
        house, lock, fetch = wheelhouse(), [], []
        for item in json.loads(report.read_text())["install"]:
            pin = f"{canonicalize_name(item['metadata']['name'])}=={item['metadata']['version']}"
            if "dir_info" in item["download_info"]:
                continue  # the package under test itself
            if release and pin == _canonical_pin(release):
                if not list((wheelhouse() / "own" / key[:24]).glob("*.whl")):
                    fetch.append(pin)  # its wheel serves package_wheel; it is not part of the lock
                continue
            sha = item["download_info"].get("archive_info", {}).get("hashes", {}).get("sha256", "")
            if sha and (house / "by-hash" / sha).exists():
                lock.append(f"{pin} --hash=sha256:{sha}")
            else:
                fetch.append(pin)
        if fetch:
            (Path(tmp) / "dl").mkdir()
            PIP_RUNS["download"] += 1
            proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                                   "--disable-pip-version-check", "-d", f"{tmp}/dl", *fetch],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise SourceError(f"pip could not download the pinned requirements of {what}:\n{_tail(proc.stderr)}")
            for f in sorted((Path(tmp) / "dl").iterdir()):
                parsed = parse_wheel_filename(f.name) if f.name.endswith(".whl") else parse_sdist_filename(f.name)
                if release and f"{canonicalize_name(parsed[0])}=={parsed[1]}" == _canonical_pin(release):
                    if f.name.endswith(".whl"):
                        (wheelhouse() / "own" / key[:24]).mkdir(parents=True, exist_ok=True)
                        os.replace(f, wheelhouse() / "own" / key[:24] / f.name)
                    else:
                        f.unlink()
            for fname, sha in _store_files(Path(tmp) / "dl").items():
                parsed = parse_wheel_filename(fname) if fname.endswith(".whl") else parse_sdist_filename(fname)
                lock.append(f"{canonicalize_name(parsed[0])}=={parsed[1]} --hash=sha256:{sha}")
    lock.sort()
    memo.parent.mkdir(exist_ok=True)
    tmp_memo = memo.with_suffix(f".{os.getpid()}.tmp")
    tmp_memo.write_text(json.dumps(lock))
    os.replace(tmp_memo, memo)
    return lock


def _canonical_pin(req: str) -> str:
    name, _, version = req.partition("==")
    return f"{canonicalize_name(name)}=={version}"


def _clean_copy(tree: Path, dest: Path) -> Path:
    """A copy of ``tree`` to build from: builds write into the source folder, which must stay pristine."""
    shutil.copytree(tree, dest, symlinks=True, ignore=shutil.ignore_patterns(_DONE, ".git"))
    return dest


def package_wheel(spec: RepoSpec, tree: Path) -> Path:
    """The package's own wheel, kept in the wheelhouse: for a PyPI source the release's own wheel when it
    has one (its modules are stripped from the venv anyway, so only its metadata and entry points count),
    else built once from a copy of the tree."""
    d = wheelhouse() / "own" / spec.source.key[:24]
    for w in sorted(d.glob("*.whl")):
        return w
    with _lock(f"wheel-{spec.source.key[:16]}"):
        for w in sorted(d.glob("*.whl")):
            return w
        if paths.offline():
            raise OfflineError(f"FROG_GYM_OFFLINE=1 but the wheel of '{spec.name}' ({spec.source}) is not built "
                               f"in {d}; building it needs the package's build backend. Run once with network.")
        with tempfile.TemporaryDirectory(dir=paths.home()) as tmp:
            wheels = []
            if spec.source.kind == "pypi":
                PIP_RUNS["download"] += 1
                subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                                "--disable-pip-version-check", "-d", f"{tmp}/out",
                                f"{spec.source.name}=={spec.source.version}"], capture_output=True, text=True)
                wheels = list(Path(tmp, "out").glob("*.whl"))
            if not wheels:
                PIP_RUNS["wheel"] += 1
                proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                                       "--disable-pip-version-check", "-w", f"{tmp}/out",
                                       str(_clean_copy(tree, Path(tmp) / "src"))], capture_output=True, text=True)
                wheels = list(Path(tmp, "out").glob("*.whl")) if proc.returncode == 0 else []
            if not wheels:
                raise SourceError(f"Building the package of '{spec.name}' ({spec.source}) failed "
                                  f"(exit {proc.returncode}). Last lines of the build log:\n"
                                  f"{_tail(proc.stdout + proc.stderr)}")
            d.mkdir(parents=True, exist_ok=True)
            os.replace(wheels[0], d / wheels[0].name)
            return d / wheels[0].name


def build_venv(spec: RepoSpec, tree: Path) -> Path:
    """The repository's venv, built once per :func:`venv_key` (pinned test requirements, no network later).

    With a hashed lock every file comes from the wheelhouse (``--no-index --find-links``), so a venv can be
    rebuilt without the network once its files are cached."""
    dest = paths.home() / "venvs" / f"{spec.name}-{venv_key(spec)}"
    if (dest / _DONE).exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _lock(f"venv-{dest.name}"):
        if (dest / _DONE).exists():
            return dest
        lock = spec.install.lock
        hashed = bool(lock) and all(_HASH.search(line) for line in lock)
        if paths.offline() and not hashed:
            raise OfflineError(f"FROG_GYM_OFFLINE=1 but the venv of '{spec.name}' is not built ({dest}); "
                               f"building it installs {len(lock or spec.install.requires)} requirements without "
                               f"a hashed lock. Run once with network, or lock them with frog-gym registry add.")
        house = ensure_wheels(lock, f"'{spec.name}'") if hashed else None
        own = package_wheel(spec, tree) if spec.install.install_package else None
        shutil.rmtree(dest, ignore_errors=True)
        log: list[str] = []
        _run_logged([sys.executable, "-m", "venv", "--without-pip", str(dest)], log, "creating the venv", spec)
        py = str(dest / "bin" / "python")
        pip = [sys.executable, "-m", "pip", "--python", py, "install", "-q", "--disable-pip-version-check"]
        if hashed:
            req = dest / "frog-lock.txt"
            own_line = [f"{own} --hash=sha256:{sha256_file(own)}"] if own is not None else []
            req.write_text("\n".join([*lock, *own_line]) + "\n")
            _run_logged(pip + ["--no-deps", "--no-index", "--require-hashes", "--find-links", str(house), "-r",
                               str(req)], log, "installing the locked requirements and the package", spec)
        elif lock:
            req = dest / "frog-lock.txt"
            req.write_text("\n".join(lock) + "\n")
            _run_logged(pip + ["--no-deps", "-r", str(req)], log, "installing the locked requirements", spec)
            if own is not None:
                _run_logged(pip + ["--no-deps", "--no-index", str(own)], log, "installing the package itself", spec)
        else:
            _run_logged(pip + [*spec.install.requires, *([str(own)] if own else [])], log,
                        "installing the requirements", spec)
        site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
        if own is not None:
            _strip_own_modules(site, parse_wheel_filename(own.name)[0])
        (site / "_frog_testbed.pth").write_text(
            "".join(f"{os.path.normpath(os.path.join(TESTBED, p))}\n" for p in spec.install.import_paths))
        for step in spec.install.steps:
            _run_logged(["bash", "-c", step], log, f"running install step {step!r}", spec, cwd=tree,
                        env={**os.environ, "VIRTUAL_ENV": str(dest), "PATH": f"{dest}/bin:{os.environ['PATH']}"})
        (dest / "frog-build.log").write_text("\n".join(log))
        (dest / _SCRUBBED).write_text("")
        (dest / _DONE).write_text(venv_key(spec))
        return dest


def frozen_requirements(venv: Path) -> list[str]:
    """``pip freeze`` of a venv, without the package under test (for writing a spec's lock)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "freeze",
                           "--exclude-editable", "--disable-pip-version-check"], capture_output=True, text=True)
    return sorted(line for line in proc.stdout.splitlines() if "==" in line)


def prepare(spec: RepoSpec) -> PreparedRepo:
    """Fetch, verify, unpack and build a repository; every step reuses the cache when it can.

    Raises:
        SourceError: the running Python is outside the spec's ``python.requires``, or a step failed.
    """
    check_python(spec)
    tree = snapshot_tree(spec)
    venv = build_venv(spec, tree)
    if spec.install.install_package and not (venv / _SCRUBBED).exists():
        _scrub_venv(spec, venv)
    return PreparedRepo(spec, tree, venv)


_SCRUBBED = ".frog-scrubbed"


def _scrub_venv(spec: RepoSpec, venv: Path) -> None:
    """Strip a venv built before :func:`_strip_own_modules` also emptied RECORD (once; then marked)."""
    with _lock(f"venv-{venv.name}"):
        if (venv / _SCRUBBED).exists():
            return
        for site in venv.glob("lib/python*/site-packages"):
            for info in site.glob("*.dist-info"):
                if (info / "direct_url.json").exists() and "/wheels/own/" in (info / "direct_url.json").read_text():
                    _strip_own_modules(site, info.name.split("-")[0])
        (venv / _SCRUBBED).write_text("")


def git_commit_tree(tree: Path, message: str) -> None:
    """Make ``tree`` a git repository with exactly one commit (deterministic author and date).

    Its objects are packed (one pack instead of a loose object per file and folder): a workspace's ``.git``
    is then about 25 entries rather than most of the tree, which every reset and grade walks."""
    env = {**os.environ, **_GIT_ENV}
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A", "-f"],
                ["git", "commit", "-q", "--no-verify", "-m", message], ["git", "repack", "-a", "-d", "-q"],
                ["git", "prune-packed", "-q"]):
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SourceError(f"git {cmd[1]} failed in {tree}: {proc.stderr.strip()}")
    shutil.rmtree(tree / ".git" / "hooks", ignore_errors=True)
