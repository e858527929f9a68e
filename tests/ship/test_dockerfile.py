"""The Dockerfile and .dockerignore, checked without Docker: lint, stages, what each runtime image runs as."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

from tests.ship.dockerfile_model import DOCKERFILE, REPO_ROOT, Dockerfile, DockerIgnore, expand

RUNTIME_TARGETS = ("lambda", "cloudrun")


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return Dockerfile()


def test_hadolint_passes() -> None:
    hadolint = Path(sys.executable).with_name("hadolint")
    result = subprocess.run([str(hadolint), str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, f"hadolint:\n{result.stdout}{result.stderr}"


@pytest.mark.parametrize(
    ("text", "variables", "expected"),
    [
        ("bundle${MODEL:+-export}", {"MODEL": ""}, "bundle"),
        ("bundle${MODEL:+-export}", {"MODEL": "Helsinki-NLP/opus-mt-zh-en"}, "bundle-export"),
        ("${PYTHON_IMAGE}", {"PYTHON_IMAGE": "python:3.11-slim"}, "python:3.11-slim"),
        ("${X:-fallback}/$Y", {"Y": "y"}, "fallback/y"),
    ],
)
def test_build_arg_expansion_follows_docker(text: str, variables: dict[str, str], expected: str) -> None:
    assert expand(text, variables) == expected


def test_bundle_comes_from_the_repository_unless_a_model_is_given() -> None:
    committed = Dockerfile()
    assert committed.stage("selected-bundle").base == "bundle"
    copies = committed.stage("bundle").all("COPY")
    assert [c.value for c in copies] == [("${BUNDLE}/", "/bundle/")]
    assert committed.build_args["BUNDLE"] == "model_artifacts/default"
    assert {c.destination for c in committed.copies("lambda") if "bundle" in str(c.destination) or
            "model_artifacts" in str(c.destination)} >= {PurePosixPath("/app/model_artifacts/default/manifest.json")}

    exported = Dockerfile(build_args={"MODEL": "Helsinki-NLP/opus-mt-zh-en"})
    assert exported.stage("selected-bundle").base == "bundle-export"
    runs = " ".join(i.value[0] for i in exported.stage("bundle-export").all("RUN"))
    # the baked model keeps the checkpoint's name (it reported "bundle", the --out folder's, before)
    assert 'python -m build.export --model "$MODEL" --out /bundle --name "$(basename "$MODEL")"' in runs
    assert "torch==2.13.0+cpu" in runs and '--index-url "$TORCH_INDEX_URL"' in runs
    assert exported.build_args["TORCH_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"


@pytest.fixture
def built_bundle() -> Iterator[Path]:
    """A bundle as ``make model`` leaves it: a folder under model_artifacts/ (git-ignored), removed afterwards."""
    folder = REPO_ROOT / "model_artifacts" / f"test-bundle-{uuid.uuid4().hex[:8]}"
    shutil.copytree(REPO_ROOT / "model_artifacts" / "default", folder)
    (folder / "extra-tokenizer-file.txt").write_text("a file only this bundle has\n", encoding="utf-8")
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("target", RUNTIME_TARGETS)
def test_a_finished_bundle_is_baked_as_it_is(built_bundle: Path, target: str) -> None:
    # GIVEN BUNDLE=model_artifacts/<name>: the runtime image copies exactly that folder's files to the path the
    # runtime loads by default, and no stage with torch is chosen for it
    chosen = Dockerfile(build_args={"BUNDLE": f"model_artifacts/{built_bundle.name}"})
    assert chosen.stage("selected-bundle").base == "bundle"
    app_bundle = PurePosixPath("/app/model_artifacts/default")
    baked = {c.source: c.destination for c in chosen.copies(target) if app_bundle in c.destination.parents}
    assert set(baked) == {p for p in built_bundle.rglob("*") if p.is_file()}
    assert baked[built_bundle / "extra-tokenizer-file.txt"] == app_bundle / "extra-tokenizer-file.txt"


def test_the_export_stage_fails_on_an_unusable_model_instead_of_skipping_its_requirements() -> None:
    # The family check used to sit inside an `if` (`if python -c "...resolve(...)"; then install; fi`): its
    # traceback was swallowed and TensorFlow silently skipped. Now its failure ends the RUN with build.families'
    # message, and the requirements follow the family it printed.
    exported = Dockerfile(build_args={"MODEL": "model_artifacts/csanmt-zh2en"})
    runs = [i.value[0] for i in exported.stage("bundle-export").all("RUN")]
    family_check = next(run for run in runs if "build.families" in run)
    assert 'family="$(python -m build.families "$MODEL")" &&' in " ".join(family_check.split())
    assert 'if [ "$family" = csanmt ]; then pip install --require-hashes -r requirements/dev.txt; fi' in family_check
    result = subprocess.run(
        [sys.executable, "-m", "build.families", "csanmt-zh2en"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 2 and result.stdout == ""
    assert "csanmt-zh2en is not a local folder" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("target", RUNTIME_TARGETS)
def test_runtime_images_start_from_slim_python_and_run_as_non_root(dockerfile: Dockerfile, target: str) -> None:
    chain = dockerfile.chain(target)
    assert chain[0].base == "python:3.11-slim"
    user = dockerfile.last(target, "USER")
    assert user is not None and user.value[0] not in ("root", "0")
    environment = dockerfile.env(target)
    assert environment["HOME"] == "/tmp" and environment["XDG_CACHE_HOME"].startswith("/tmp/")
    assert environment["PYTHONDONTWRITEBYTECODE"] == "1"
    assert environment["MALLOC_ARENA_MAX"] == "2"  # one heap per server thread otherwise
    runs = [i.value[0] for i in dockerfile.instructions(target) if i.cmd == "RUN"]
    assert any(r.startswith("python -m compileall") for r in runs), "bytecode is compiled at build time"
    assert not [r for r in runs if "torch" in r or "transformers" in r]


def _defined_functions(path: Path) -> set[str]:
    return {node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)}


def test_lambda_image_runs_the_lambda_handler_through_the_runtime_interface_client(dockerfile: Dockerfile) -> None:
    entrypoint, cmd = dockerfile.last("lambda", "ENTRYPOINT"), dockerfile.last("lambda", "CMD")
    assert entrypoint is not None and cmd is not None
    # awslambdaric's loop with the Runtime API's response streaming (handler/adapters/lambda_streaming.py)
    assert list(entrypoint.value) == ["python", "-m", "handler.adapters.lambda_streaming"]
    assert (REPO_ROOT / "handler" / "adapters" / "lambda_streaming.py").is_file()
    module, function = cmd.value[0].rsplit(".", 1)
    assert module == "handler.adapters.aws_lambda"
    assert function in _defined_functions(REPO_ROOT / Path(*module.split(".")).with_suffix(".py"))


def test_cloudrun_image_serves_main_py_with_functions_framework(dockerfile: Dockerfile) -> None:
    cmd = dockerfile.last("cloudrun", "CMD")
    # functions-framework's own server with a long keep-alive (the functions-framework command's options)
    assert cmd is not None and list(cmd.value) == ["python", "-m", "handler.adapters.gunicorn_server"]
    assert (REPO_ROOT / "handler" / "adapters" / "gunicorn_server.py").is_file()
    environment = dockerfile.env("cloudrun")
    assert environment["FUNCTION_SOURCE"] == "main.py" and environment["PORT"] == "8080"
    assert environment["FUNCTION_TARGET"] in _defined_functions(REPO_ROOT / "handler" / "adapters" / "gcp.py")
    main_source = (REPO_ROOT / "main.py").read_text()
    for entry_point in ("translate_http", "translate_storage_event", "translate_part_event"):
        assert entry_point in _defined_functions(REPO_ROOT / "handler" / "adapters" / "gcp.py")
        assert f'"{entry_point}"' in main_source  # exported in __all__
    assert "EXPOSE" in {i.cmd for i in dockerfile.instructions("cloudrun")}


@pytest.mark.parametrize(
    ("path", "excluded"),
    [
        (".venv/bin/python", True),
        (".venv-run/lib/site.py", True),
        (".train/data/train.tsv", True),
        ("tests/conftest.py", True),
        (".git/HEAD", True),
        ("README.md", True),
        ("handler/__pycache__/config.cpython-311.pyc", True),
        ("handler/config.py", False),
        ("handler/api/web/index.html", False),
        ("main.py", False),
        ("requirements/runtime-aws.txt", False),
        ("model_artifacts/default/manifest.json", False),
        ("build/export.py", False),
    ],
)
def test_dockerignore_keeps_only_the_build_inputs(path: str, excluded: bool) -> None:
    assert DockerIgnore.read().excluded(path) is excluded


def test_every_copy_source_exists_in_the_build_context(dockerfile: Dockerfile) -> None:
    ignore = DockerIgnore.read()
    for stage in dockerfile.stages:
        for copy in stage.all("COPY"):
            if any(flag.startswith("--from=") for flag in copy.flags):
                continue
            for source in (expand(value, dockerfile.build_args) for value in copy.value[:-1]):
                assert (REPO_ROOT / source).exists(), f"stage {stage.name}: COPY {source} is missing"
                assert not ignore.excluded(source.rstrip("/")), f"stage {stage.name}: .dockerignore drops {source}"
    install = dockerfile.stage("bundle-export").all("RUN")[0].value[0]
    assert "pip install --require-hashes -r requirements/build.txt" in install
