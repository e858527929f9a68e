"""Deployment templates, validated offline: the AWS SAM template (cfn-lint and its security-relevant facts) and
the Google Cloud deployment (infra/gcp/deploy.sh's commands, staged source and settings)."""

from __future__ import annotations

import ast
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from handler import config as runtime_config
from handler.config import RuntimeConfig
from handler.formats import FILE_SUFFIXES
from tests.ship.deploy_stand_ins import DeployBench
from tests.ship.dockerfile_model import REPO_ROOT, Dockerfile

TEMPLATE = REPO_ROOT / "infra" / "aws" / "template.yaml"
GCP_DEPLOY = REPO_ROOT / "infra" / "gcp" / "deploy.sh"
GCP_ENV = REPO_ROOT / "infra" / "gcp" / "env.yaml"

# TRANSLATE_STATE_DIR is the local server's folder; a deployment keeps its state in the output bucket
ENV_VARS = {value for name, value in vars(runtime_config).items() if name.startswith("ENV_")} - {
    runtime_config.ENV_STATE_DIR
}


class _CloudFormationLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short forms (!Ref, !Sub, ...) read as {"Ref": ...} / {"Fn::Sub": ...}."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    name = suffix if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        return {name: value.split(".", 1) if suffix == "GetAtt" else value}
    if isinstance(node, yaml.SequenceNode):
        return {name: loader.construct_sequence(node, deep=True)}
    return {name: loader.construct_mapping(node, deep=True)}  # type: ignore[arg-type]


_CloudFormationLoader.add_multi_constructor("!", _tag)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return yaml.load(TEMPLATE.read_text(), Loader=_CloudFormationLoader)  # noqa: S506 - a SafeLoader subclass


@pytest.fixture(scope="module")
def function(template: dict[str, Any]) -> dict[str, Any]:
    functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::Function"]
    assert len(functions) == 1
    return functions[0]


# ---- AWS --------------------------------------------------------------------------------------------------
def test_cfn_lint_passes() -> None:
    result = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), str(TEMPLATE)], capture_output=True, text=True, cwd=REPO_ROOT
    )
    assert result.returncode == 0, f"cfn-lint found problems:\n{result.stdout}{result.stderr}"


def test_function_is_a_2048_mb_container_image_with_a_file_sized_timeout(
    template: dict[str, Any], function: dict[str, Any]
) -> None:
    properties = function["Properties"]
    assert properties["PackageType"] == "Image"
    assert properties["MemorySize"] == 2048
    timeout = properties["Timeout"]
    assert timeout == {"Ref": "FunctionTimeoutSeconds"}
    timeout_parameter = template["Parameters"]["FunctionTimeoutSeconds"]
    assert 120 <= timeout_parameter["Default"] <= timeout_parameter["MaxValue"] <= 900
    metadata = function["Metadata"]
    assert (TEMPLATE.parent / metadata["DockerContext"] / metadata["Dockerfile"]).resolve() == REPO_ROOT / "Dockerfile"
    assert Dockerfile().has_stage(metadata["DockerBuildTarget"])
    assert metadata["DockerBuildTarget"] == "lambda"


def test_https_endpoint_auth_is_a_parameter_defaulting_to_iam(
    template: dict[str, Any], function: dict[str, Any]
) -> None:
    url = function["Properties"]["FunctionUrlConfig"]
    assert url["AuthType"] == {"Ref": "FunctionUrlAuthType"}
    parameter = template["Parameters"]["FunctionUrlAuthType"]
    assert parameter["Default"] == "AWS_IAM" and set(parameter["AllowedValues"]) == {"AWS_IAM", "NONE"}
    assert "TranslateUrl" in template["Outputs"]


def test_uploads_to_the_input_bucket_trigger_the_function(template: dict[str, Any], function: dict[str, Any]) -> None:
    # one S3 event per suffix the runtime translates, named after it, and the fan-out's parts
    events = function["Properties"]["Events"]
    assert [e["Type"] for e in events.values()] == ["S3"] * (len(FILE_SUFFIXES) + 1)
    names = {f"{suffix[1:].capitalize()}Uploaded": suffix for suffix in FILE_SUFFIXES}
    assert set(events) == {*names, "PartCreated"}
    for name, suffix in names.items():
        s3 = events[name]["Properties"]
        assert s3["Bucket"] == {"Ref": "InputBucket"}
        assert s3["Events"] == "s3:ObjectCreated:*"
        assert s3["Filter"]["S3Key"]["Rules"] == [{"Name": "suffix", "Value": suffix}]
    buckets = template["Resources"]
    assert buckets["InputBucket"]["Properties"]["BucketName"] == {"Ref": "InputBucketName"}
    assert buckets["OutputBucket"]["Properties"]["BucketName"] == {"Ref": "OutputBucketName"}


def test_fan_out_parts_trigger_the_function_with_retries_and_a_dead_letter_queue(
    template: dict[str, Any], function: dict[str, Any]
) -> None:
    parts = function["Properties"]["Events"]["PartCreated"]["Properties"]
    assert parts["Bucket"] == {"Ref": "OutputBucket"}
    assert parts["Filter"]["S3Key"]["Rules"] == [
        {"Name": "prefix", "Value": {"Ref": "WorkPrefix"}},
        {"Name": "suffix", "Value": ".txt"},
    ]
    # the part objects are the only .txt objects the function writes under the work prefix (handler/storage/bulk.py)
    from handler.storage import bulk

    assert bulk.PART_SUFFIX == ".txt" and bulk.DONE_SUFFIX != ".txt" and not bulk.MANIFEST_NAME.endswith(".txt")
    assert template["Parameters"]["WorkPrefix"]["Default"] == RuntimeConfig().work_prefix


def test_failed_async_invocations_go_to_an_sqs_on_failure_destination(
    template: dict[str, Any], function: dict[str, Any]
) -> None:
    invoke = function["Properties"]["EventInvokeConfig"]
    # the retry count and the maximum event age are parameters, within Lambda's own bounds
    assert invoke["MaximumRetryAttempts"] == {"Ref": "AsyncRetryAttempts"}
    assert invoke["MaximumEventAgeInSeconds"] == {"Ref": "MaxEventAgeSeconds"}
    retries, age = template["Parameters"]["AsyncRetryAttempts"], template["Parameters"]["MaxEventAgeSeconds"]
    assert (retries["MinValue"], retries["MaxValue"], retries["Default"]) == (0, 2, 2)
    assert (age["MinValue"], age["MaxValue"], age["Default"]) == (60, 21600, 21600)
    # an event that fails every attempt (or expires) lands in the queue, with its error
    assert invoke["DestinationConfig"]["OnFailure"] == {
        "Type": "SQS",
        "Destination": {"Fn::GetAtt": ["FailedEventsQueue", "Arn"]},
    }
    queue = template["Resources"]["FailedEventsQueue"]
    assert queue["Type"] == "AWS::SQS::Queue"
    assert queue["Properties"]["MessageRetentionPeriod"] == 1209600  # 14 days, SQS's longest
    assert "DeadLetterQueue" not in function["Properties"]  # one place for failed events, not two
    assert template["Outputs"]["FailedEventsQueue"]["Value"] == {"Ref": "FailedEventsQueue"}


def test_reserved_concurrency_is_a_parameter_that_caps_the_function(
    template: dict[str, Any], function: dict[str, Any]
) -> None:
    parameter = template["Parameters"]["ReservedConcurrency"]
    assert parameter["Type"] == "Number" and parameter["MinValue"] == 0 and parameter["Default"] == 0
    # 0 means "no reservation" (Lambda's own 0 would stop every invocation), so the property is left out then
    assert template["Conditions"]["ReserveConcurrency"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "ReservedConcurrency"}, 0]}]
    }
    assert function["Properties"]["ReservedConcurrentExecutions"] == {
        "Fn::If": ["ReserveConcurrency", {"Ref": "ReservedConcurrency"}, {"Ref": "AWS::NoValue"}]
    }


def test_output_bucket_differs_from_the_input_bucket(template: dict[str, Any], function: dict[str, Any]) -> None:
    environment = function["Properties"]["Environment"]["Variables"]
    assert environment["TRANSLATE_OUTPUT_BUCKET"] == {"Ref": "OutputBucketName"}
    assertion = template["Rules"]["SeparateBuckets"]["Assertions"][0]["Assert"]
    assert assertion == {"Fn::Not": [{"Fn::Equals": [{"Ref": "InputBucketName"}, {"Ref": "OutputBucketName"}]}]}


def _statements(function: dict[str, Any]) -> list[dict[str, Any]]:
    policies = function["Properties"]["Policies"]
    assert all(isinstance(p, dict) and "Statement" in p for p in policies), "only inline policies, no managed ones"
    return [s for p in policies for s in p["Statement"]]


def test_iam_reads_the_input_bucket_and_reads_lists_writes_only_the_output_bucket(function: dict[str, Any]) -> None:
    grants: dict[str, set[str]] = {}
    for statement in _statements(function):
        assert statement["Effect"] == "Allow"
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resource = statement["Resource"]["Fn::Sub"]
        for action in actions:
            assert "*" not in action, f"wildcard action {action}"
            grants.setdefault(action, set()).add(resource)
    assert grants == {
        # uploads, and (bulk translation) the function's own parts, manifests, part results and output versions
        "s3:GetObject": {
            "arn:${AWS::Partition}:s3:::${InputBucketName}/*",
            "arn:${AWS::Partition}:s3:::${OutputBucketName}/*",
        },
        "s3:PutObject": {
            "arn:${AWS::Partition}:s3:::${OutputBucketName}/*",
            # DeepL's document API: uploaded documents, only under the document prefix of the input bucket
            "arn:${AWS::Partition}:s3:::${InputBucketName}/${DocumentPrefix}*",
        },
        "s3:ListBucket": {"arn:${AWS::Partition}:s3:::${OutputBucketName}"},  # the fan-out lists its part results
        # a downloaded document's source, translation and fan-out objects; no other object is ever deleted
        "s3:DeleteObject": {
            "arn:${AWS::Partition}:s3:::${InputBucketName}/${DocumentPrefix}*",
            "arn:${AWS::Partition}:s3:::${OutputBucketName}/${OutputPrefix}${DocumentPrefix}*",
            "arn:${AWS::Partition}:s3:::${OutputBucketName}/${WorkPrefix}*",
        },
    }


def test_every_runtime_setting_is_a_parameter_with_the_runtime_default(
    template: dict[str, Any], function: dict[str, Any]
) -> None:
    environment = function["Properties"]["Environment"]["Variables"]
    # all but the HTTP request timeout: Lambda reports each invocation's time left itself
    expected = ENV_VARS - {runtime_config.ENV_REQUEST_TIMEOUT_S}
    assert set(environment) == expected, "the template's environment must list every TRANSLATE_* variable"
    # the event time limit is the function's own timeout (Lambda also reports the time left itself)
    assert environment[runtime_config.ENV_EVENT_TIMEOUT_S] == function["Properties"]["Timeout"]
    defaults = {}
    for variable, value in environment.items():
        if variable in (runtime_config.ENV_OUTPUT_BUCKET, runtime_config.ENV_EVENT_TIMEOUT_S):
            continue
        if variable == runtime_config.ENV_DOCUMENT_BUCKET:  # the input bucket, whose upload events translate them
            assert value == {"Ref": "InputBucketName"}
            continue
        parameter = template["Parameters"][value["Ref"]]
        assert variable in parameter["Description"]
        defaults[variable] = str(parameter["Default"])
    assert RuntimeConfig.from_env(defaults) == RuntimeConfig()


# ---- Google Cloud -----------------------------------------------------------------------------------------
def _deploy_print(**environ: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(GCP_DEPLOY), "print"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", **environ},
    )


@pytest.fixture(scope="module")
def gcloud_commands(tmp_path_factory: pytest.TempPathFactory) -> list[list[str]]:
    """The gcloud calls of `make deploy-gcp`'s printed commands, run through the recording stand-ins."""
    bench = DeployBench(tmp_path_factory.mktemp("deploy-gcp"))
    recorded = bench.printed(
        "deploy-gcp", "GCP_PROJECT=my-project", "INPUT_BUCKET=uploads-in", "OUTPUT_BUCKET=uploads-out"
    )
    return recorded.of("gcloud")


def _flags(command: list[str]) -> dict[str, list[str]]:
    flags: dict[str, list[str]] = {}
    for i, word in enumerate(command):
        if word.startswith("--"):
            value = command[i + 1] if i + 1 < len(command) and not command[i + 1].startswith("--") else ""
            flags.setdefault(word, []).append(value)
    return flags


def _deploy(commands: list[list[str]], entry_point: str) -> dict[str, list[str]]:
    deploys = [_flags(c) for c in commands if c[:3] == ["gcloud", "functions", "deploy"]]
    matching = [d for d in deploys if d["--entry-point"] == [entry_point]]
    assert len(matching) == 1, f"expected one deploy of {entry_point}"
    return matching[0]


def test_gcp_functions_have_2_gib_and_the_gcp_entry_points(gcloud_commands: list[list[str]]) -> None:
    # main.py is the source the functions run; read its exports without importing it (that loads the model)
    exported = next(
        node.value
        for node in ast.parse((REPO_ROOT / "main.py").read_text()).body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
    )
    for entry_point in ("translate_http", "translate_storage_event", "translate_part_event"):
        flags = _deploy(gcloud_commands, entry_point)
        assert entry_point in ast.literal_eval(exported)
        assert flags["--gen2"] == [""]
        assert flags["--memory"] == ["2Gi"]
        assert flags["--runtime"] == ["python311"]
        assert flags["--service-account"] == ["zh-en-translate-fn@my-project.iam.gserviceaccount.com"]


def test_gcp_http_trigger_is_private_unless_asked(gcloud_commands: list[list[str]]) -> None:
    flags = _deploy(gcloud_commands, "translate_http")
    assert "--trigger-http" in flags
    assert "--no-allow-unauthenticated" in flags and "--allow-unauthenticated" not in flags
    public = _deploy_print(GCP_PROJECT="p", INPUT_BUCKET="a-in", OUTPUT_BUCKET="a-out", ALLOW_UNAUTHENTICATED="1")
    assert "--allow-unauthenticated" in public.stdout.split()


def test_gcp_storage_trigger_finalize_on_input_bucket_output_elsewhere(gcloud_commands: list[list[str]]) -> None:
    flags = _deploy(gcloud_commands, "translate_storage_event")
    assert sorted(flags["--trigger-event-filters"]) == [
        "bucket=uploads-in",
        "type=google.cloud.storage.object.v1.finalized",
    ]
    add_binding = ["gcloud", "storage", "buckets", "add-iam-policy-binding"]
    bindings: dict[str, list[tuple[str, str]]] = {}
    for command in (c for c in gcloud_commands if c[:4] == add_binding):
        flags_of = _flags(command)
        bindings.setdefault(command[4], []).append((flags_of["--role"][0], (flags_of.get("--condition") or [""])[0]))
    documents_only = (
        "expression=resource.name.startsWith('projects/_/buckets/uploads-in/objects/_documents/'),title=documents-only"
    )
    assert bindings == {
        # read uploads; write and delete DeepL documents, only under TRANSLATE_DOCUMENT_PREFIX
        "gs://uploads-in": [("roles/storage.objectViewer", ""), ("roles/storage.objectUser", documents_only)],
        "gs://uploads-out": [("roles/storage.objectUser", "")],  # write (and replace) translations
    }
    environment_file = flags["--env-vars-file"][0]
    assert environment_file.endswith("env-files.yaml")


def test_gcp_parts_function_fans_out_on_the_output_bucket_with_retries(gcloud_commands: list[list[str]]) -> None:
    flags = _deploy(gcloud_commands, "translate_part_event")
    assert sorted(flags["--trigger-event-filters"]) == [
        "bucket=uploads-out",
        "type=google.cloud.storage.object.v1.finalized",
    ]
    assert "--retry" in flags and flags["--max-instances"] == ["100"]
    assert flags["--env-vars-file"][0].endswith("env-files.yaml")  # writes the output bucket like the files function


DEAD_LETTERS = "zh-en-translate-failed-events"


def test_gcp_event_functions_retry_and_then_dead_letter_failed_events(gcloud_commands: list[list[str]]) -> None:
    # both event functions retry failed events, at most 100 instances each (bounds cost)
    for entry_point in ("translate_storage_event", "translate_part_event"):
        flags = _deploy(gcloud_commands, entry_point)
        assert "--retry" in flags and flags["--max-instances"] == ["100"]
    # a dead-letter topic, with a subscription that keeps what lands there
    assert ["gcloud", "pubsub", "topics", "create", DEAD_LETTERS, "--project", "my-project"] in gcloud_commands
    kept = next(c for c in gcloud_commands if c[:4] == ["gcloud", "pubsub", "subscriptions", "create"])
    assert kept[4] == f"{DEAD_LETTERS}-kept" and _flags(kept)["--topic"] == [DEAD_LETTERS]
    assert _flags(kept)["--message-retention-duration"] == ["7d"]
    # each function's Eventarc subscription: backoff, a bounded number of deliveries and age, then the topic
    updates = [c for c in gcloud_commands if c[:4] == ["gcloud", "pubsub", "subscriptions", "update"]]
    # the subscription of each function's trigger, as Google Cloud names it (the stand-in: eventarc-<trigger>-sub)
    assert [
        next(f for f in ("files", "parts") if f"eventarc-zh-en-translate-{f}-trigger-sub" in c[4]) for c in updates
    ] == [
        "files",
        "parts",
    ]
    for update in updates:
        flags = _flags(update)
        assert flags["--dead-letter-topic"] == [DEAD_LETTERS]
        assert flags["--max-delivery-attempts"] == ["5"]
        assert flags["--message-retention-duration"] == ["6h"]  # the SAM template's MaxEventAgeSeconds default
        assert flags["--min-retry-delay"] == ["10s"] and flags["--max-retry-delay"] == ["600s"]
    # Pub/Sub's service agent may publish to the topic and pull from the subscriptions it forwards
    roles = [_flags(c)["--role"][0] for c in gcloud_commands if c[2:4] == ["topics", "add-iam-policy-binding"]]
    roles += [_flags(c)["--role"][0] for c in gcloud_commands if c[2:4] == ["subscriptions", "add-iam-policy-binding"]]
    assert roles == ["roles/pubsub.publisher", "roles/pubsub.subscriber", "roles/pubsub.subscriber"]


def test_gcp_retry_settings_are_parameters_with_pubsub_limits() -> None:
    environ = {"GCP_PROJECT": "p", "INPUT_BUCKET": "a-in", "OUTPUT_BUCKET": "a-out"}
    custom = _deploy_print(**environ, MAX_DELIVERY_ATTEMPTS="12", MAX_EVENT_AGE="2d", FILE_INSTANCES="7")
    assert custom.returncode == 0, custom.stderr
    commands = [shlex.split(line) for line in custom.stdout.splitlines() if line.startswith("gcloud ")]
    updates = [_flags(c) for c in commands if c[:4] == ["gcloud", "pubsub", "subscriptions", "update"]]
    assert [(u["--max-delivery-attempts"], u["--message-retention-duration"]) for u in updates] == [
        (["12"], ["2d"])
    ] * 2
    assert _deploy(commands, "translate_storage_event")["--max-instances"] == ["7"]
    for name, value in (("MAX_DELIVERY_ATTEMPTS", "4"), ("MAX_DELIVERY_ATTEMPTS", "101"), ("MAX_EVENT_AGE", "soon")):
        refused = _deploy_print(**environ, **{name: value})
        assert refused.returncode == 2 and name in refused.stderr, refused.stderr


def test_gcp_deploy_refuses_one_bucket_for_input_and_output() -> None:
    result = _deploy_print(GCP_PROJECT="p", INPUT_BUCKET="same", OUTPUT_BUCKET="same")
    assert result.returncode == 2
    assert "INPUT_BUCKET and OUTPUT_BUCKET must differ" in result.stderr


def test_gcp_settings_are_runtime_variables_with_runtime_defaults() -> None:
    settings = yaml.safe_load(GCP_ENV.read_text())
    assert all(isinstance(v, str) for v in settings.values()), "env-vars-file values must be strings"
    set_by_deploy = {
        runtime_config.ENV_BUNDLE_DIR,
        runtime_config.ENV_OUTPUT_BUCKET,
        runtime_config.ENV_DOCUMENT_BUCKET,
        runtime_config.ENV_EVENT_TIMEOUT_S,
        runtime_config.ENV_REQUEST_TIMEOUT_S,
    }
    assert set(settings) == ENV_VARS - set_by_deploy
    assert RuntimeConfig.from_env(settings) == RuntimeConfig()


def test_cloud_run_http_service_deadline_is_its_timeout(tmp_path: Path) -> None:
    # the HTTP service's env file (deploy.sh env, as the printed Cloud Run commands write it) carries its --timeout
    environ = {
        "PATH": "/usr/bin:/bin",
        "PLATFORM": "run",
        "GCP_PROJECT": "p",
        "INPUT_BUCKET": "a",
        "OUTPUT_BUCKET": "b",
    }
    written = subprocess.run(
        ["bash", str(GCP_DEPLOY), "env", str(tmp_path)], capture_output=True, text=True, env=environ
    )
    assert written.returncode == 0, written.stderr
    http_env = yaml.safe_load((tmp_path / "env-run-http.yaml").read_text())
    printed = subprocess.run(["bash", str(GCP_DEPLOY), "print"], capture_output=True, text=True, env=environ).stdout
    service = next(shlex.split(line) for line in printed.splitlines() if line.startswith("gcloud run deploy "))
    assert service[3] == "zh-en-translate"  # the first service deployed is the HTTP one
    assert _flags(service)["--timeout"] == [f"{http_env[runtime_config.ENV_REQUEST_TIMEOUT_S]}s"]
    assert RuntimeConfig.from_env(http_env).request_deadline(0.0) == 300 - RuntimeConfig().deadline_margin_s


def test_gcp_staged_source_holds_the_cloudrun_image_files(tmp_path: Path, tiny_bundle_dir: Path) -> None:
    # a copy of the repository's deployable parts, with a test bundle as model_artifacts/default
    repo = tmp_path / "repo"
    repo.mkdir()
    for part in ("main.py", "handler", "requirements", "infra"):
        source = REPO_ROOT / part
        if source.is_dir():
            shutil.copytree(source, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, repo / part)
    shutil.copytree(tiny_bundle_dir, repo / "model_artifacts" / "default")

    stage = tmp_path / "stage"
    result = subprocess.run(
        ["bash", str(repo / "infra" / "gcp" / "deploy.sh"), "stage", str(stage)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "OUTPUT_BUCKET": "uploads-out", "INPUT_BUCKET": "uploads-in"},
    )
    assert result.returncode == 0, result.stderr
    source = stage / "source"
    staged = {p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file()}
    image = {
        c.destination.relative_to(Dockerfile().workdir("cloudrun")).as_posix()
        for c in Dockerfile().copies("cloudrun", overrides={"model_artifacts/default": tiny_bundle_dir})
        if c.destination.is_relative_to(Dockerfile().workdir("cloudrun"))
    }
    assert staged == image | {"requirements.txt", ".gcloudignore"}
    assert (source / "requirements.txt").read_bytes() == (REPO_ROOT / "requirements" / "runtime-gcp.txt").read_bytes()
    files_env = yaml.safe_load((stage / "env-files.yaml").read_text())
    assert files_env[runtime_config.ENV_OUTPUT_BUCKET] == "uploads-out"
    # the event functions' deadline is their --timeout (Cloud Functions reports no time left)
    printed = _deploy_print(GCP_PROJECT="p", INPUT_BUCKET="a-in", OUTPUT_BUCKET="a-out").stdout
    commands = [shlex.split(line) for line in printed.splitlines() if line.startswith("gcloud ")]
    for entry_point in ("translate_storage_event", "translate_part_event"):
        assert _deploy(commands, entry_point)["--timeout"] == [f"{files_env[runtime_config.ENV_EVENT_TIMEOUT_S]}s"]
    assert RuntimeConfig.from_env(files_env).event_timeout_s == 540
    # the HTTP function keeps DeepL's documents in the buckets: records in the output bucket, uploads in the input one
    http_env = yaml.safe_load((stage / "env-http.yaml").read_text())
    assert http_env[runtime_config.ENV_OUTPUT_BUCKET] == "uploads-out" == files_env[runtime_config.ENV_OUTPUT_BUCKET]
    assert http_env[runtime_config.ENV_DOCUMENT_BUCKET] == "uploads-in" == files_env[runtime_config.ENV_DOCUMENT_BUCKET]
    assert RuntimeConfig.from_env(http_env).event_timeout_s == 300  # /translate_file's time: the HTTP --timeout
    # every HTTP request's deadline is the HTTP function's --timeout; the event functions answer no HTTP requests
    http_timeout = _deploy(commands, "translate_http")["--timeout"]
    assert http_timeout == [f"{http_env[runtime_config.ENV_REQUEST_TIMEOUT_S]}s"] == ["300s"]
    assert RuntimeConfig.from_env(files_env).request_timeout_s == 0


def test_gcp_stage_without_a_bundle_says_how_to_build_one(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "infra", repo / "infra")
    result = subprocess.run(
        ["bash", str(repo / "infra" / "gcp" / "deploy.sh"), "stage", str(tmp_path / "stage")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "BUNDLE=model_artifacts/default: no bundle there; build one first: make model" in result.stderr


@pytest.mark.parametrize("value", ["0", "1", "999", "1000", "20000", "-5", "01000"])
def test_the_templates_part_chars_accepts_what_the_runtime_accepts(template: dict[str, Any], value: str) -> None:
    # PartChars had MinValue 0, so a deploy with 1-999 succeeded and the function then failed its start-up
    import re

    from handler.errors import ConfigurationError

    parameter = template["Parameters"]["PartChars"]
    accepted_by_template = re.fullmatch(parameter["AllowedPattern"], value) is not None
    try:
        RuntimeConfig.from_env({runtime_config.ENV_PART_CHARS: value})
        accepted_by_runtime = True
    except ConfigurationError:
        accepted_by_runtime = False
    assert accepted_by_template == accepted_by_runtime or value == "01000"  # a leading zero: the runtime reads 1000
    assert not accepted_by_template or accepted_by_runtime


def configuration_page_exceptions(page: str) -> set[str]:
    """The variables the configuration page says the templates leave out (its "except" sentence)."""
    sentence = re.search(r"The deployment templates expose every one of them.*?\.\s", page, re.S)
    assert sentence, "the configuration page no longer says what the templates expose"
    return set(re.findall(r"`(TRANSLATE_[A-Z_]+)`", sentence.group()))


def test_the_configuration_page_names_every_variable_a_template_leaves_out(function: dict[str, Any]) -> None:
    aws = set(function["Properties"]["Environment"]["Variables"])
    gcp = set(yaml.safe_load(GCP_ENV.read_text())) | set(re.findall(r"(TRANSLATE_[A-Z_]+):", GCP_DEPLOY.read_text()))
    everything = {value for name, value in vars(runtime_config).items() if name.startswith("ENV_")}
    left_out = (everything - aws) | (everything - gcp)
    page = (REPO_ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert configuration_page_exceptions(page) == left_out
