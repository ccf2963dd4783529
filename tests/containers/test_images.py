"""The offline images: cached by content hash, rebuilt on change, unknown names (ring: tests, integration).

Real Docker, real images (built by :mod:`harness.containers.images` when missing).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness.containers import images
from harness.containers.launcher import DockerLauncher
from harness.launcher import LaunchSpec

pytestmark = pytest.mark.integration


def test_second_build_builds_nothing_and_keeps_the_tags(docker_ready: None) -> None:
    first = images.build_images()
    began = time.monotonic()
    second = images.build_images()
    elapsed = time.monotonic() - began
    assert [i.tag for i in second] == [i.tag for i in first]
    assert [i.built for i in second] == [False, False], second
    assert all(images.image_exists(i.tag) for i in second)
    assert all(i.size_bytes > 50_000_000 for i in second), second  # real root filesystems
    assert elapsed < 30.0, f"a cached build took {elapsed:.1f} s"


def test_changed_node_source_changes_the_node_tag_and_only_that_is_rebuilt(
    docker_ready: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = images.ensure_node_image()
    repo = tmp_path / "repo"
    for package in images._node_packages():  # reference_controller and what it imports (kafkawire)
        shutil.copytree(
            images._REPO_ROOT / package, repo / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    monkeypatch.setattr(images, "_REPO_ROOT", repo)
    same = images.ensure_node_image()
    assert same.tag == before.tag, "the tag must depend on content, not on where the sources are"
    assert not same.built
    token = f"kzk-image-test-{time.time_ns()}"
    init = repo / "reference_controller" / "__init__.py"
    init.write_text(init.read_text() + f"\n# {token}\n")
    changed = images.ensure_node_image()
    try:
        assert changed.tag != before.tag
        assert changed.tag.startswith("kzk-node:")
        assert changed.built
        assert not images.ensure_node_image().built  # and cached from now on
        inside = subprocess.run(
            [
                "docker",
                "run",
                "--rm",
                "--network",
                "none",
                changed.tag,
                "cat",
                "/opt/kit/src/reference_controller/__init__.py",
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        assert token in inside
    finally:
        subprocess.run(["docker", "rmi", "--force", changed.tag], check=False, capture_output=True)


def test_unknown_image_name_is_an_error_naming_it_and_the_build_command(docker_ready: None) -> None:
    name = "kzk-no-such-image:does-not-exist"
    with pytest.raises(images.ImageNotFound) as caught:
        images.require_image(name)
    message = str(caught.value)
    assert name in message
    assert "python -m harness build-images" in message


def test_launcher_with_unknown_node_image_starts_nothing(
    docker_ready: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_leftovers: None
) -> None:
    monkeypatch.setenv("KZK_NODE_IMAGE", "kzk-no-such-node:1")
    spec = LaunchSpec(role="node", name="never", argv=["true"], cwd=tmp_path, log_path=tmp_path / "out.log")
    with pytest.raises(images.ImageNotFound, match=r"kzk-no-such-node:1.*build-images"):
        DockerLauncher().spawn(spec)


def test_build_images_cli_prints_tags_sizes_and_seconds(docker_ready: None) -> None:
    proc = subprocess.run(
        [".venv/bin/python", "-m", "harness", "build-images"],
        cwd=images._REPO_ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for image in images.build_images():
        assert any(image.tag in line and " MB" in line for line in lines), proc.stdout
    assert lines[-1].startswith("build-images: OK in ")


def test_build_images_cli_without_a_daemon_says_why_and_how_to_fix(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "DOCKER_HOST": f"unix://{tmp_path}/no-daemon.sock"}
    proc = subprocess.run(
        [str(images._REPO_ROOT / ".venv/bin/python"), "-m", "harness", "build-images"],
        cwd=images._REPO_ROOT,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "no Docker daemon answers" in proc.stderr
    assert "scripts/setup_docker.sh" in proc.stderr
    assert "Traceback" not in proc.stderr
