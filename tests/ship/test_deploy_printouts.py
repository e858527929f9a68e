"""Printed == executed (issue 35): each deploy target's printout, run by hand, does what ``DEPLOY=1`` does.

The printed Google Cloud commands could not be run as printed: the staging line dropped the buckets (so it wrote
``TRANSLATE_OUTPUT_BUCKET: ""``), the Cloud Run services read ``<STAGE_DIR>/env-run-http.yaml`` that no printed
command wrote, and ``DEPLOY=1`` ran other commands than those printed (a describe before each create). Here the
printout of ``make deploy-aws`` / ``deploy-gcp`` / ``deploy-cloudrun`` is run by bash through recording stand-ins
for ``sam``, ``gcloud``, ``gsutil`` and the container engines (tests/ship/deploy_stand_ins.py), then the same target
with ``DEPLOY=1``: the tools' calls and the files written must be the same, call for call and byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ship.deploy_stand_ins import SERVICE_AGENT, DeployBench
from tests.ship.dockerfile_model import REPO_ROOT

BUCKETS = ("INPUT_BUCKET=zh-uploads", "OUTPUT_BUCKET=en-translations")
GCP = ("GCP_PROJECT=my-project", *BUCKETS)
# the variables each target is given on make's command line; the Cloud Run one names an engine (buildah) that
# the engine detection would not choose (docker answers first), so a printout that dropped it would differ; it and
# the AWS one name an address for the alarms (the Cloud Functions one does not: both ways are run)
TARGETS = {
    "deploy-aws": (*BUCKETS, "ALERT_EMAIL=ops@example.com"),
    "deploy-gcp": GCP,
    "deploy-cloudrun": (*GCP, "CONTAINER=buildah", "ALERT_EMAIL=ops@example.com"),
}


@pytest.fixture
def bench(tmp_path: Path) -> DeployBench:
    return DeployBench(tmp_path)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_printed_commands_do_what_deploy_does(bench: DeployBench, tmp_path: Path, target: str) -> None:
    stage = tmp_path / "stage"
    variables = (*TARGETS[target], f"STAGE_DIR={stage}")
    printed = bench.printed(target, *variables, written=stage)
    deployed = bench.deployed(target, *variables, written=stage)
    assert printed.calls, "the printout called no tool"
    assert printed.calls == deployed.calls
    assert printed.files == deployed.files
    if target != "deploy-aws":
        # the staged settings carry the buckets given on the command line
        settings = [name for name in printed.files if name.endswith(".yaml")]
        assert settings, f"no env file written: {sorted(printed.files)}"
        for name in settings:
            text = printed.files[name].decode()
            assert 'TRANSLATE_OUTPUT_BUCKET: "en-translations"' in text, name
            assert 'TRANSLATE_DOCUMENT_BUCKET: "zh-uploads"' in text, name


def test_deploy_gcp_without_a_stage_dir_stages_in_a_new_folder_either_way(bench: DeployBench) -> None:
    printed = bench.printed("deploy-gcp", *GCP)
    deployed = bench.deployed("deploy-gcp", *GCP)
    assert printed.calls == deployed.calls and printed.files == deployed.files
    assert "<mktemp-0>/source/main.py" in printed.files
    sources = {call[call.index("--source") + 1] for call in printed.of("gcloud") if "--source" in call}
    assert sources == {"<mktemp-0>/source"}


def test_cloud_run_services_read_env_files_a_printed_command_wrote(bench: DeployBench, tmp_path: Path) -> None:
    # the printout used to end its services with --env-vars-file '<STAGE_DIR>/env-run-http.yaml', written by nothing
    stage = tmp_path / "stage"
    printed = bench.printed("deploy-cloudrun", *TARGETS["deploy-cloudrun"], f"STAGE_DIR={stage}", written=stage)
    services = [call for call in printed.of("gcloud") if call[1:3] == ["run", "deploy"]]
    assert [call[call.index("--env-vars-file") + 1] for call in services] == [
        f"{stage}/env-run-{service}.yaml" for service in ("http", "files", "parts")
    ]
    assert {"env-run-http.yaml", "env-run-files.yaml", "env-run-parts.yaml"} <= set(printed.files)
    # the values only Google Cloud knows are read by the printed lines themselves
    publisher = next(call for call in printed.of("gcloud") if "roles/pubsub.publisher" in call)
    assert f"serviceAccount:{SERVICE_AGENT}" in publisher
    # the image is built and pushed with the engine named on the command line
    assert [call[:2] for call in printed.calls if call[0] in ("docker", "buildah")] == [
        ["buildah", "build"],
        ["buildah", "push"],
    ]


def test_the_printed_staging_line_carries_the_buckets(bench: DeployBench) -> None:
    printout = bench.printout("deploy-gcp", *GCP)
    stage_line = next(line for line in printout.splitlines() if "infra/gcp/deploy.sh stage" in line)
    assert stage_line == (
        "BUNDLE=model_artifacts/default GCP_PROJECT=my-project INPUT_BUCKET=zh-uploads OUTPUT_BUCKET=en-translations "
        'bash infra/gcp/deploy.sh stage "$STAGE_DIR"'
    )


@pytest.mark.parametrize(
    ("target", "needed"),
    [
        ("deploy-aws", ("INPUT_BUCKET", "OUTPUT_BUCKET")),
        ("deploy-gcp", ("GCP_PROJECT", "INPUT_BUCKET", "OUTPUT_BUCKET")),
        ("deploy-cloudrun", ("GCP_PROJECT", "INPUT_BUCKET", "OUTPUT_BUCKET")),
    ],
)
def test_each_printout_starts_with_a_header_naming_the_variables_it_needs(
    bench: DeployBench, target: str, needed: tuple[str, ...]
) -> None:
    lines = bench.printout(target).splitlines()
    header = []
    for line in lines:
        if not line.startswith("#"):
            break
        header.append(line)
    assert header, lines[:3]
    text = "\n".join(header)
    for variable in needed:
        assert variable in text, f"{target}'s header does not name {variable}:\n{text}"
    assert f"make {target} " in text and "DEPLOY=1" in text
    # a value not given shows as a placeholder, never as an empty word
    commands = [line for line in lines if not line.startswith("#")]
    assert any(f"<{needed[-1]}>" in line for line in commands)


# ---- the demo says what it is -------------------------------------------------------------------------------
def _notice(bundle: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "handler.model.licence", bundle], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _bundle(licence: str) -> Iterator[str]:
    """A bundle as ``make model`` leaves it under model_artifacts/ (git-ignored), its manifest naming ``licence``."""
    folder = REPO_ROOT / "model_artifacts" / f"test-licence-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    manifest = {"name": "user-model", "family": "marian", "licence": licence}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    try:
        yield f"model_artifacts/{folder.name}"
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=True)


@pytest.fixture
def commercial_bundle() -> Iterator[str]:
    yield from _bundle("Apache-2.0")


@pytest.fixture
def non_commercial_bundle() -> Iterator[str]:
    yield from _bundle("CC BY-NC 4.0")


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_deploy_printout_says_the_default_is_a_non_commercial_demo(
    bench: DeployBench, target: str, commercial_bundle: str
) -> None:
    notice = _notice("model_artifacts/default")
    assert "non-commercial" in notice.lower() and "make model MODEL=Helsinki-NLP/opus-mt-zh-en" in notice
    assert "BUNDLE=model_artifacts/opus-mt-zh-en" in notice
    lines = bench.printout(target).splitlines()
    assert f"# {notice}" in lines
    assert _notice(commercial_bundle) == ""
    assert "non-commercial" not in bench.printout(target, f"BUNDLE={commercial_bundle}").lower()


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_any_bundle_with_a_non_commercial_licence_gets_the_notice(
    bench: DeployBench, target: str, non_commercial_bundle: str
) -> None:
    notice = _notice(non_commercial_bundle)
    assert "CC BY-NC 4.0" in notice
    assert f"# {notice}" in bench.printout(target, f"BUNDLE={non_commercial_bundle}").splitlines()


@pytest.mark.parametrize("target", ["image", "image-gcp"])
def test_make_image_says_the_default_is_a_non_commercial_demo(
    bench: DeployBench, target: str, commercial_bundle: str
) -> None:
    result = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO_ROOT), target, "CONTAINER=docker"],
        capture_output=True,
        text=True,
        env=bench.environ(),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert f"image.sh: {_notice('model_artifacts/default')}" in result.stderr.splitlines()
    assert bench.log.read_text().splitlines()[-1].startswith("docker build ")  # and it built
    baked = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO_ROOT), target, f"BUNDLE={commercial_bundle}"],
        capture_output=True,
        text=True,
        env=bench.environ(),
        timeout=60,
    )
    assert baked.returncode == 0, baked.stderr
    assert "non-commercial" not in baked.stderr.lower()
