"""What only the local backend does; the shared sandbox contract is in test_sandbox_contract.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from frog_gym import paths
from frog_gym.errors import SandboxUnavailableError
from frog_gym.sandbox import make_sandbox
from frog_gym.sandbox.local import LocalSandbox, UnsandboxedWarning


@pytest.fixture()
def sb(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    s = LocalSandbox(ws)
    yield s
    s.close()


def test_cannot_see_home_cache_or_task_files(sb):
    home = paths.home()
    tasks = Path(__file__).resolve().parents[1] / "registry" / "tasks"
    r = sb.run(f"ls {home} 2>&1; ls {tasks} 2>&1; ls ~ 2>&1; ls /root 2>&1; cat /etc/shadow 2>&1")
    assert "No such file or directory" in r.output
    assert ".jsonl" not in r.output and "venvs" not in r.output and "snapshots" not in r.output


def test_only_its_own_venv_is_visible(tmp_path):
    venvs = [tmp_path / "venvs" / n for n in ("a", "b")]
    for v in venvs:
        (v / "bin").mkdir(parents=True)
    ws = tmp_path / "ws"
    ws.mkdir()
    with LocalSandbox(ws, venvs[0]) as s:
        out = s.run(f"ls {tmp_path / 'venvs'}").output.split()
    assert out == ["a"]


def test_missing_bubblewrap_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("FROG_GYM_UNSANDBOXED", raising=False)
    with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap.*FROG_GYM_UNSANDBOXED=1"):
        make_sandbox("local", None, tmp_path)


def test_unsandboxed_needs_the_opt_in_and_warns(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")  # no bwrap on this PATH
    (tmp_path / "bwrap").unlink(missing_ok=True)
    monkeypatch.setenv("FROG_GYM_UNSANDBOXED", "1")
    ws = tmp_path / "ws"
    ws.mkdir()
    if Path("/usr/bin/bwrap").exists():
        monkeypatch.setattr("shutil.which", lambda name, *a, **k: None if name == "bwrap" else "/usr/bin/" + name)
    with pytest.warns(UnsandboxedWarning, match="WITHOUT a sandbox"):
        s = make_sandbox("local", None, ws)
    try:
        assert s.run("pwd").output.strip() == str(ws)
        assert s.run("sleep 30", timeout=0.5).timed_out
        assert s.run("echo ok").output == "ok\n"
    finally:
        s.close()


def test_the_etc_overlay_is_written_safely_by_concurrent_first_sandboxes(tmp_path, monkeypatch):
    """On a fresh cache, the workers of `frog-gym bench --workers 2` each write it at once."""
    import threading

    from frog_gym.sandbox.local import _etc_dir

    monkeypatch.setenv("FROG_GYM_HOME", str(tmp_path / "home"))
    errors: list[BaseException] = []

    def make() -> None:
        try:
            _etc_dir()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    etc = tmp_path / "home" / "etc"
    assert sorted(p.name for p in etc.iterdir()) == ["group", "hosts", "passwd"]
    assert (etc / "hosts").read_text().startswith("127.0.0.1 localhost")


@pytest.mark.parametrize("launcher", ["prlimit", "preexec"])
def test_both_launch_paths_bound_the_sandbox(tmp_path, monkeypatch, launcher):
    """The shell starts through `sh` + `prlimit` (no Python between fork and exec, so ``vfork``) where prlimit is
    installed, else through a ``preexec_fn``; either way every rlimit is set and the shell is in its cgroups
    before bubblewrap runs."""
    import shutil

    from frog_gym.sandbox.base import Limits
    from frog_gym.sandbox.local import _prlimit_path

    if launcher == "preexec":  # a PATH that has bubblewrap but no prlimit
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "bwrap").symlink_to(shutil.which("bwrap"))
        monkeypatch.setenv("PATH", str(bin_dir))
    assert (_prlimit_path() is None) == (launcher == "preexec")
    ws = tmp_path / "ws"
    ws.mkdir()
    lim = Limits(memory_bytes=768 << 20, cpu_seconds=77, file_bytes=5 << 20)
    with LocalSandbox(ws, limits=lim) as s:
        out = s.run("ulimit -v; ulimit -t; ulimit -f; ulimit -c").output.split()
        assert out == [str(lim.memory_bytes // 1024), "77", str((5 << 20) // 1024), "0"], out  # bash: KiB
        host_pids = s._cgroup.procs() if s._cgroup is not None else []
        if s._cgroup is not None and s._cgroup.paths:
            assert host_pids, "the sandbox's processes are not in its cgroups"
            assert s._proc.pid in host_pids  # the launcher entered the cgroup before exec, so bubblewrap is in it
