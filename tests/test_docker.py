"""The docker backend beyond the shared contract: images, cleanup after a crash, the CLI. Every test needs a
real engine (``bash .ci/docker.sh start``) and skips, saying why, where none answers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from frog_gym.cli import main
from frog_gym.sandbox import images
from frog_gym.sandbox.docker import LABEL, DockerSandbox, prune
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import load_repo

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def client(docker_engine):
    return docker_engine


@pytest.fixture(scope="module")
def inflection():
    return prepare(load_repo("inflection"))


def _ours(client, **labels):
    filters = {"label": [f"{LABEL}=1", *(f"{k}={v}" for k, v in labels.items())]}
    return client.containers.list(all=True, filters=filters, ignore_removed=True)


def test_repo_image_has_the_venv_at_its_path_and_imports_from_testbed(client, inflection, tmp_path):
    (tmp_path / "inflection").mkdir()
    (tmp_path / "inflection" / "__init__.py").write_text("WHERE = 'testbed'\n")
    with DockerSandbox(tmp_path, inflection, client=client) as sb:
        r = sb.run("python -c 'import inflection, sys; print(inflection.WHERE, sys.prefix)'; "
                   "python -m pytest --version")
    assert r.exit_code == 0, r.output
    assert f"testbed {inflection.venv}" in r.output and "pytest 8" in r.output


def test_rebuild_is_a_cache_hit_and_tags_are_content_hashes(client, inflection):
    tag, _ = images.build_repo_image(inflection, client)
    start = time.monotonic()
    again, hit = images.build_repo_image(inflection, client)
    assert (again, hit) == (tag, True) and time.monotonic() - start < 10
    assert images.build_base(client)[1] is True
    assert tag == images.repo_tag(inflection) and tag.startswith("frog-gym-inflection:")
    img = client.images.get(tag)
    assert img.labels["frog-gym.base"] == images.base_tag()
    assert images.image_digest(inflection, client) == img.id == images.image_digest("inflection", client)
    assert img.id.startswith("sha256:")


def test_repositories_share_the_base_layer(client, inflection):
    other, _ = images.build_repo_image(prepare(load_repo("toolz")), client)
    base = client.images.get(images.base_tag()).attrs["RootFS"]["Layers"]
    for tag in (images.repo_tag(inflection), other):
        layers = client.images.get(tag).attrs["RootFS"]["Layers"]
        assert layers[:len(base)] == base and len(layers) == len(base) + 1


def test_container_settings(client, tmp_path):
    with DockerSandbox(tmp_path, client=client) as sb:
        sb.restart()
        attrs = client.api.inspect_container(sb.container.id)
        r = sb.run("grep -E '^Cap(Eff|Bnd)' /proc/self/status; id -u; ps -o user= -p 1")
    host = attrs["HostConfig"]
    assert attrs["Config"]["Labels"][f"{LABEL}.owner-pid"] == str(os.getpid())
    assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] and host["PidsLimit"] > 0
    assert host["Memory"] > 0 and host["NanoCpus"] > 0 and host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    lines = r.output.split()
    assert lines[1] == lines[3] == "0000000000000002"  # DAC_OVERRIDE only: it edits the root-owned workspace
    assert lines[4] == "65534" and lines[5] == "root"


_DRIVER = """
import sys, time
from pathlib import Path
from frog_gym.sandbox.docker import DockerSandbox
sb = DockerSandbox(Path(sys.argv[1]))
sb.run("setsid sleep 500 &")
print(sb.container.id, flush=True)
time.sleep(600)
"""


def test_sigkilled_driver_leaves_no_container(client, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", _DRIVER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    cid = proc.stdout.readline().strip()
    assert cid
    assert [c.id for c in client.containers.list(filters={"id": cid})] == [cid]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while client.containers.list(all=True, filters={"id": cid}) and time.monotonic() < deadline:
        time.sleep(0.2)
    prune(client)  # what any later sandbox does on start, in case the engine kept it
    assert client.containers.list(all=True, filters={"id": cid}) == []


def test_prune_and_every_new_sandbox_remove_containers_of_dead_owners_only(client, tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    base = images.build_base(client)[0]
    labels = {LABEL: "1", f"{LABEL}.owner-host": socket.gethostname(), f"{LABEL}.owner-pid": dead,
              f"{LABEL}.owner-start": "0", f"{LABEL}.role": "test-orphan"}

    def orphan():
        c = client.containers.create(base, ["sleep", "600"], labels=labels, network_mode="none")
        c.start()
        return c

    first = orphan()
    assert first.name in prune(client)
    orphan()
    with DockerSandbox(tmp_path, client=client) as live:
        live.restart()  # starting its container prunes
        assert _ours(client, **{f"{LABEL}.role": "test-orphan"}) == []
        assert prune(client) == []  # a live owner's container stays
        assert live.run("echo still here").output == "still here\n"


def test_prune_survives_containers_that_go_while_it_runs(client):
    """Another process's containers come and go (auto-removed) while a sandbox starts and prunes: a container
    listed and gone a moment later must not fail the prune (CI's failure: inspect of a listed container, 404)."""
    base = images.build_base(client)[0]
    labels = {LABEL: "1", f"{LABEL}.owner-host": "elsewhere", f"{LABEL}.role": "test-transient"}
    made = [client.containers.run(base, ["sleep", f"0.{i % 10}"], labels=labels, network_mode="none",
                                  auto_remove=True, detach=True) for i in range(20)]
    deadline = time.monotonic() + 60
    rounds = 0
    names = {c.name for c in made}
    while _ours(client, **{f"{LABEL}.role": "test-transient"}) and time.monotonic() < deadline:
        assert not names & set(prune(client))  # another machine's containers are its own prune's to remove
        rounds += 1
    assert rounds > 0
    assert _ours(client, **{f"{LABEL}.role": "test-transient"}) == []


def test_cli_build_images_prune(client, capsys):
    assert main(["docker", "build", "inflection"]) == 0
    assert "cached" in capsys.readouterr().out
    assert main(["docker", "images", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    tags = {r["tag"]: r for r in rows}
    assert images.base_tag() in tags and tags[images.base_tag()]["id"].startswith("sha256:")
    assert tags[images.repo_tag(prepare(load_repo("inflection")))]["kind"] == "repo"
    assert main(["docker", "prune"]) == 0
    assert main(["docker", "build"]) == 1
    assert "Say which image to build" in capsys.readouterr().err
