"""Deployment templates, validated offline: the AWS SAM template (cfn-lint and its security-relevant facts) and
the Google Cloud deployment (infra/gcp/deploy.sh's commands, staged source and settings)."""

from __future__ import annotations

import ast
import copy
import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from handler import config as runtime_config
from handler.config import RuntimeConfig
from handler.formats import FILE_SUFFIXES
from tests.ship.deploy_stand_ins import CHANNEL, STAND_IN_LISTED, DeployBench, Recorded
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
        if variable == runtime_config.ENV_USAGE_STORE:  # the usage table, where KeyQuotas creates one
            condition, enabled, disabled = value["Fn::If"]
            assert enabled == {"Fn::Sub": "dynamodb:${UsageTable}"} and disabled == ""
            assert template["Conditions"][condition] == {"Fn::Equals": [{"Ref": "KeyQuotas"}, "enabled"]}
            assert variable in template["Parameters"]["KeyQuotas"]["Description"]
            assert template["Parameters"]["KeyQuotas"]["Default"] == "disabled"  # "": the runtime's default
            continue
        parameter = template["Parameters"][value["Ref"]]
        assert variable in parameter["Description"]
        defaults[variable] = str(parameter["Default"])
    assert RuntimeConfig.from_env(defaults) == RuntimeConfig()


def test_key_quotas_create_a_usage_table_the_function_may_only_update_and_read(template: dict[str, Any]) -> None:
    from handler.storage import usage

    resources = template["Resources"]
    parameter = template["Parameters"]["KeyQuotas"]
    assert parameter["Default"] == "disabled" and set(parameter["AllowedValues"]) == {"enabled", "disabled"}
    conditional = {name for name, resource in resources.items() if resource.get("Condition") == "CountKeyUsage"}
    assert conditional == {"UsageTable", "UsageTablePolicy"}  # nothing of it without quotas
    table = resources["UsageTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["KeySchema"] == [{"AttributeName": usage.DYNAMODB_KEY, "KeyType": "HASH"}]
    assert table["AttributeDefinitions"] == [{"AttributeName": usage.DYNAMODB_KEY, "AttributeType": "S"}]
    assert table["TimeToLiveSpecification"] == {"AttributeName": usage.DYNAMODB_EXPIRES, "Enabled": True}
    policy = resources["UsageTablePolicy"]["Properties"]
    assert policy["RoleName"] == {"Ref": "TranslateFunctionRole"}  # the role SAM makes for the function
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Allow"
    assert sorted(statement["Action"]) == ["dynamodb:GetItem", "dynamodb:UpdateItem"]  # no Scan, Query, Delete
    assert statement["Resource"] == {"Fn::GetAtt": ["UsageTable", "Arn"]}
    # and the function's own policies grant nothing on DynamoDB
    function = next(r for r in resources.values() if r["Type"] == "AWS::Serverless::Function")
    assert not [s for s in _statements(function) if "dynamodb" in json.dumps(s["Action"])]


# ---- AWS: alarms ------------------------------------------------------------------------------------------
ALARM = "AWS::CloudWatch::Alarm"
# what an alarm on a store of lost work watches: any message held (SQS) or passed on (SNS)
STORE_METRICS = {
    "AWS::SQS::Queue": ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName"),
    "AWS::SNS::Topic": ("AWS/SNS", "NumberOfMessagesPublished", "TopicName"),
}
# properties naming where failed work goes: a function's (or event source's) on-failure destination, a function's
# or a queue's dead-letter target
_FAILURE_DESTINATIONS = {"OnFailure": "Destination", "DeadLetterQueue": "TargetArn", "DeadLetterConfig": "TargetArn"}


def _named_resource(value: Any) -> str:
    """The logical id a Ref / GetAtt names, or the value itself as text (an ARN from outside the template)."""
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return str(value["Fn::GetAtt"][0])
    return json.dumps(value)


def _failure_destinations(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _FAILURE_DESTINATIONS and isinstance(value, dict) and _FAILURE_DESTINATIONS[key] in value:
                found.add(_named_resource(value[_FAILURE_DESTINATIONS[key]]))
            elif key == "RedrivePolicy" and isinstance(value, dict) and "deadLetterTargetArn" in value:
                found.add(_named_resource(value["deadLetterTargetArn"]))
            found |= _failure_destinations(value)
    elif isinstance(node, list):
        for value in node:
            found |= _failure_destinations(value)
    return found


def notification_topics(template: dict[str, Any]) -> set[str]:
    """The topics the alarms notify: they carry notifications, not work."""
    found = set()
    for resource in template["Resources"].values():
        if resource["Type"] == ALARM:
            for actions in ("AlarmActions", "OKActions"):
                found |= {t["Ref"] for t in _action_topics(resource["Properties"].get(actions))}
    return found


def _action_topics(actions: Any) -> list[dict[str, str]]:
    if isinstance(actions, dict) and "Fn::If" in actions:
        return [*_action_topics(actions["Fn::If"][1]), *_action_topics(actions["Fn::If"][2])]
    return actions if isinstance(actions, list) else []


def stores_of_lost_work(template: dict[str, Any]) -> set[str]:
    """Every queue and topic of the template that can hold lost work, and every destination failed work is sent to
    (one outside the template, an ARN, too: no alarm here can watch it)."""
    resources = template["Resources"]
    stores = {name for name, resource in resources.items() if resource["Type"] in STORE_METRICS}
    return (stores | _failure_destinations(resources)) - notification_topics(template)


def alarmed_stores(template: dict[str, Any]) -> set[str]:
    """The queues and topics an alarm watches for any message (more than 0, at once)."""
    watched = set()
    for resource in template["Resources"].values():
        alarm = resource["Properties"] if resource["Type"] == ALARM else {}
        for store_type, (namespace, metric, dimension) in STORE_METRICS.items():
            if (alarm.get("Namespace"), alarm.get("MetricName")) != (namespace, metric):
                continue
            assert alarm["Threshold"] == 0 and alarm["ComparisonOperator"] == "GreaterThanThreshold", alarm
            assert alarm["EvaluationPeriods"] == 1 and alarm["Statistic"] in ("Maximum", "Sum"), alarm
            for named in alarm["Dimensions"]:
                if named["Name"] == dimension and named["Value"].get("Fn::GetAtt", [None, None])[1] == dimension:
                    target = named["Value"]["Fn::GetAtt"][0]
                    assert template["Resources"][target]["Type"] == store_type
                    watched.add(target)
    return watched


def test_every_queue_or_topic_that_can_hold_lost_work_has_an_alarm(template: dict[str, Any]) -> None:
    stores = stores_of_lost_work(template)
    assert "FailedEventsQueue" in stores  # the function's on-failure destination
    unwatched = stores - alarmed_stores(template)
    assert not unwatched, f"no alarm fires when these hold lost work: {sorted(unwatched)}"


def test_a_new_queue_or_destination_without_an_alarm_is_caught(template: dict[str, Any]) -> None:
    planted = copy.deepcopy(template)
    planted["Resources"]["MoreFailedWork"] = {"Type": "AWS::SQS::Queue", "Properties": {}}
    assert stores_of_lost_work(planted) - alarmed_stores(planted) == {"MoreFailedWork"}
    planted = copy.deepcopy(template)
    function = next(r for r in planted["Resources"].values() if r["Type"] == "AWS::Serverless::Function")
    function["Properties"]["DeadLetterQueue"] = {"Type": "SNS", "TargetArn": "arn:aws:sns:us-east-1:1:elsewhere"}
    assert stores_of_lost_work(planted) - alarmed_stores(planted) == {'"arn:aws:sns:us-east-1:1:elsewhere"'}
    planted = copy.deepcopy(template)
    del planted["Resources"]["FailedEventsAlarm"]
    assert stores_of_lost_work(planted) - alarmed_stores(planted) == {"FailedEventsQueue"}


def _alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: r["Properties"] for name, r in template["Resources"].items() if r["Type"] == ALARM}


def test_every_alarm_notifies_the_email_topic_only_when_an_address_is_given(template: dict[str, Any]) -> None:
    parameter = template["Parameters"]["AlarmEmail"]
    assert parameter["Default"] == ""
    for value, accepted in (("", True), ("ops@example.com", True), ("a b@c.d", False), ("x", False), ("a@b", False)):
        assert (re.fullmatch(parameter["AllowedPattern"], value) is not None) == accepted, value
    assert notification_topics(template) == {"AlarmTopic"}
    topic = template["Resources"]["AlarmTopic"]
    condition = topic["Condition"]
    assert template["Conditions"][condition] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmEmail"}, ""]}]}
    (subscription,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::SNS::Subscription"]
    assert subscription["Condition"] == condition
    assert subscription["Properties"] == {
        "TopicArn": {"Ref": "AlarmTopic"},
        "Protocol": "email",
        "Endpoint": {"Ref": "AlarmEmail"},
    }
    notify = {"Fn::If": [condition, [{"Ref": "AlarmTopic"}], {"Ref": "AWS::NoValue"}]}
    alarms = _alarms(template)
    assert len(alarms) >= 4
    for name, alarm in alarms.items():
        assert alarm["AlarmActions"] == notify and alarm["OKActions"] == notify, name
        assert alarm["TreatMissingData"] == "notBreaching", name  # no invocations is no trouble
        assert "docs/operations.md#" in alarm["AlarmDescription"], f"{name} says nowhere what to do"
    assert template["Outputs"]["AlarmTopic"]["Condition"] == condition


def _function_metric(alarm: dict[str, Any], function_name: str) -> str | None:
    """The AWS/Lambda metric a plain alarm watches on ``function_name``, or None."""
    dimensions = alarm.get("Dimensions", [])
    if alarm.get("Namespace") != "AWS/Lambda" or dimensions != [
        {"Name": "FunctionName", "Value": {"Ref": function_name}}
    ]:
        return None
    return str(alarm["MetricName"])


def test_the_functions_errors_and_throttles_alarm_at_the_first_one(template: dict[str, Any]) -> None:
    (function_name,) = [n for n, r in template["Resources"].items() if r["Type"] == "AWS::Serverless::Function"]
    watched = {}
    for name, alarm in _alarms(template).items():
        metric = _function_metric(alarm, function_name)
        if metric:
            watched[metric] = name
            assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == (
                "Sum",
                0,
                "GreaterThanThreshold",
            ), name
    assert set(watched) == {"Errors", "Throttles"}


def _evaluate(expression: str, values: dict[str, float]) -> float:
    """A metric math expression of + - * / over numbers and metric ids."""
    operators = {ast.Add: float.__add__, ast.Sub: float.__sub__, ast.Mult: float.__mul__, ast.Div: float.__truediv__}

    def value(node: ast.expr) -> float:
        if isinstance(node, ast.BinOp) and type(node.op) in operators:
            return operators[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            return float(values[node.id])
        raise AssertionError(f"not plain arithmetic: {ast.dump(node)}")

    return value(ast.parse(expression, mode="eval").body)


def test_the_duration_alarm_fires_past_80_percent_of_the_functions_own_timeout(
    template: dict[str, Any], function: dict[str, Any]
) -> None:
    (function_name,) = [n for n, r in template["Resources"].items() if r["Type"] == "AWS::Serverless::Function"]
    timeout_parameter = function["Properties"]["Timeout"]["Ref"]
    (alarm,) = [
        a
        for a in _alarms(template).values()
        if any(m.get("MetricStat", {}).get("Metric", {}).get("MetricName") == "Duration" for m in a.get("Metrics", []))
    ]
    (duration,) = [m for m in alarm["Metrics"] if "MetricStat" in m]
    (share,) = [m for m in alarm["Metrics"] if "Expression" in m]
    assert duration["MetricStat"]["Metric"]["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function_name}}]
    assert duration["MetricStat"]["Stat"] == "Maximum" and duration["ReturnData"] is False
    assert share["ReturnData"] is True and alarm["ComparisonOperator"] == "GreaterThanThreshold"
    # the expression divides by the template's one timeout (the parameter the function's Timeout is), in ms
    expression = share["Expression"]["Fn::Sub"]
    assert re.findall(r"\$\{(\w+)\}", expression) == [timeout_parameter]
    bounds = template["Parameters"][timeout_parameter]
    for timeout_s in (bounds["MinValue"], bounds["Default"], bounds["MaxValue"]):
        share_of = expression.replace(f"${{{timeout_parameter}}}", str(timeout_s))

        def fires(milliseconds: float, share_of: str = share_of) -> bool:
            return bool(_evaluate(share_of, {duration["Id"]: milliseconds}) > alarm["Threshold"])

        assert not fires(0.8 * timeout_s * 1000) and fires(0.8 * timeout_s * 1000 + 1), timeout_s
        assert fires(timeout_s * 1000)


def test_cfn_lint_checks_the_alarms_too(tmp_path: Path) -> None:
    # the linting above covers the alarms' properties: a wrong comparison in one of them fails it
    planted = tmp_path / "template.yaml"
    text = TEMPLATE.read_text()
    assert text.count("ComparisonOperator: GreaterThanThreshold") >= 4
    planted.write_text(text.replace("ComparisonOperator: GreaterThanThreshold", "ComparisonOperator: Above", 1))
    result = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), str(planted)], capture_output=True, text=True, cwd=REPO_ROOT
    )
    assert result.returncode != 0 and "'Above' is not one of" in result.stdout, result.stdout


def test_make_deploy_aws_gives_the_alert_email_to_the_template(template: dict[str, Any], tmp_path: Path) -> None:
    bench = DeployBench(tmp_path)
    buckets = ("INPUT_BUCKET=zh-in", "OUTPUT_BUCKET=en-out")
    for email, expected in (("ops@example.com", ["AlarmEmail=ops@example.com"]), ("", [])):
        sam = bench.printed("deploy-aws", *buckets, f"ALERT_EMAIL={email}").of("sam")
        (deploy,) = [call for call in sam if call[1] == "deploy"]
        overrides = deploy[deploy.index("--parameter-overrides") + 1 :]
        assert [word for word in overrides if word.startswith("AlarmEmail=")] == expected
        assert {word.split("=", 1)[0] for word in overrides} <= set(template["Parameters"])


@pytest.mark.parametrize(
    "address", ["ops@example.com", "first.last+alerts@ops.example.org", "a b@c.de", "x", "a'b@c.com"]
)
def test_both_deploy_scripts_take_exactly_the_addresses_the_template_takes(
    template: dict[str, Any], address: str
) -> None:
    # an address the template would refuse only when CloudFormation reads it is refused before anything runs
    taken = re.fullmatch(template["Parameters"]["AlarmEmail"]["AllowedPattern"], address) is not None
    for script, environ in (
        (REPO_ROOT / "infra" / "aws" / "deploy.sh", {}),
        (GCP_DEPLOY, {"GCP_PROJECT": "p", "INPUT_BUCKET": "a-in", "OUTPUT_BUCKET": "a-out"}),
    ):
        result = subprocess.run(
            ["bash", str(script), "print"],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "ALERT_EMAIL": address, **environ},
        )
        assert (result.returncode == 0) == taken, (script.parent.name, result.stderr)
        assert taken or "ALERT_EMAIL must be one e-mail address" in result.stderr


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


def test_gcp_key_quotas_add_a_redis_only_the_http_service_reaches(tmp_path: Path) -> None:
    names = {"GCP_PROJECT": "p", "INPUT_BUCKET": "a-in", "OUTPUT_BUCKET": "a-out"}
    assert "redis" not in _deploy_print(**names).stdout  # without USAGE_REDIS: nothing of it
    for platform, egress in (("functions", "--egress-settings"), ("run", "--vpc-egress")):
        printed = _deploy_print(**names, USAGE_REDIS="1", PLATFORM=platform)
        assert printed.returncode == 0, printed.stderr
        lines = [line for line in printed.stdout.splitlines() if not line.startswith("#")]
        create = next(shlex.split(line.split("|| ", 1)[1]) for line in lines if "redis instances create" in line)
        assert create[4] == "zh-en-translate-usage" and "--enable-auth" in create and "basic" in create
        connector = next(line for line in lines if "vpc-access connectors create" in line)
        assert "zh-en-translate-usage" in connector
        deploys = [
            shlex.split(line) for line in lines if line.startswith(("gcloud functions deploy", "gcloud run deploy"))
        ]
        reaching = [deploy[3] for deploy in deploys if "--vpc-connector" in deploy]
        assert reaching == ["zh-en-translate"]  # the HTTP service only; the event services count nothing
        (http,) = [_flags(deploy) for deploy in deploys if deploy[3] == "zh-en-translate"]
        assert http["--vpc-connector"] == ["zh-en-translate-usage"] and http[egress] == ["private-ranges-only"]
        written = next(line for line in lines if "deploy.sh usage-store" in line)
        assert "redis://:$REDIS_AUTH@$REDIS_HOST:6379/0" in written
        assert lines.index(written) < lines.index(
            next(
                line
                for line in lines
                if "zh-en-translate --gen2" in line or line.startswith("gcloud run deploy zh-en-translate ")
            )
        )
        assert not [line for line in lines if "add-iam-policy-binding" in line and "redis" in line]  # no IAM: AUTH
        teardown = [line for line in printed.stdout.splitlines() if line.startswith("#   gcloud")]
        assert any("redis instances delete zh-en-translate-usage" in line for line in teardown)
        assert any("vpc-access connectors delete zh-en-translate-usage" in line for line in teardown)
    refused = _deploy_print(**names, USAGE_REDIS="yes")
    assert refused.returncode == 2 and "USAGE_REDIS must be 0 or 1" in refused.stderr


def test_gcp_usage_store_mode_points_the_http_env_file_at_the_redis(tmp_path: Path) -> None:
    environ = {
        "PATH": "/usr/bin:/bin",
        "PLATFORM": "run",
        "GCP_PROJECT": "p",
        "INPUT_BUCKET": "a",
        "OUTPUT_BUCKET": "b",
    }
    for mode in (["env", str(tmp_path)], ["usage-store", str(tmp_path), "redis://:secret@10.0.0.3:6379/0"]):
        done = subprocess.run(["bash", str(GCP_DEPLOY), *mode], capture_output=True, text=True, env=environ)
        assert done.returncode == 0, done.stderr
    http = yaml.safe_load((tmp_path / "env-run-http.yaml").read_text())
    files = yaml.safe_load((tmp_path / "env-run-files.yaml").read_text())
    assert http[runtime_config.ENV_USAGE_STORE] == "redis://:secret@10.0.0.3:6379/0"
    assert files[runtime_config.ENV_USAGE_STORE] == ""  # the event services count no key
    assert RuntimeConfig.from_env(http).usage_store == "redis://:secret@10.0.0.3:6379/0"


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


def http_env_and_printout(folder: Path, platform: str, **settings: str) -> tuple[dict[str, Any], str]:
    """The HTTP entry point's env file as `deploy.sh env` writes it into ``folder`` (as the printed commands do), and
    the printed commands, for ``platform`` (functions or run) and any other deploy.sh ``settings``."""
    environ = {
        "PATH": "/usr/bin:/bin",
        "PLATFORM": platform,
        "GCP_PROJECT": "p",
        "INPUT_BUCKET": "a",
        "OUTPUT_BUCKET": "b",
    }
    environ |= settings
    written = subprocess.run(["bash", str(GCP_DEPLOY), "env", str(folder)], capture_output=True, text=True, env=environ)
    assert written.returncode == 0, written.stderr
    http_env = yaml.safe_load((folder / ("env-run-http.yaml" if platform == "run" else "env-http.yaml")).read_text())
    printed = subprocess.run(["bash", str(GCP_DEPLOY), "print"], capture_output=True, text=True, env=environ).stdout
    return http_env, printed


def test_cloud_run_http_service_deadline_is_its_timeout(tmp_path: Path) -> None:
    # the HTTP service's env file (deploy.sh env, as the printed Cloud Run commands write it) carries its --timeout
    http_env, printed = http_env_and_printout(tmp_path, "run")
    service = next(shlex.split(line) for line in printed.splitlines() if line.startswith("gcloud run deploy "))
    assert service[3] == "zh-en-translate"  # the first service deployed is the HTTP one
    assert _flags(service)["--timeout"] == [f"{http_env[runtime_config.ENV_REQUEST_TIMEOUT_S]}s"]
    assert RuntimeConfig.from_env(http_env).request_deadline(0.0) == 300 - RuntimeConfig().deadline_margin_s


@pytest.mark.parametrize("platform", ["functions", "run"])
@pytest.mark.parametrize("concurrency", [None, "40"])
def test_gcp_http_instances_take_concurrent_requests_with_a_thread_each_and_events_one_at_a_time(
    tmp_path: Path, platform: str, concurrency: str | None
) -> None:
    # the HTTP function or service takes HTTP_CONCURRENCY requests at once (16 by default: docs/deployment.md), and
    # its gunicorn gets a thread for each (functions-framework reads THREADS), or the extra ones would wait unseen
    # by the decoder's back-pressure; a file or part event is a whole document: one an instance
    settings = {"HTTP_CONCURRENCY": concurrency} if concurrency else {}
    expected = concurrency or "16"
    http_env, printed = http_env_and_printout(tmp_path, platform, **settings)
    assert http_env["THREADS"] == expected
    deploys = [shlex.split(line) for line in printed.splitlines() if " deploy " in line and line.startswith("gcloud ")]
    concurrencies = {_flags(command).get("--concurrency", ["(none)"])[0] for command in deploys[1:]}
    assert _flags(deploys[0])["--concurrency"] == [expected]  # the first deployed is the HTTP one
    assert len(deploys) == 3 and concurrencies == {"1"}


@pytest.mark.parametrize("value", ["0", "1001", "many", "-4"])
def test_gcp_deploy_refuses_an_http_concurrency_the_platforms_refuse(value: str) -> None:
    refused = _deploy_print(GCP_PROJECT="p", INPUT_BUCKET="a", OUTPUT_BUCKET="b", HTTP_CONCURRENCY=value)
    assert refused.returncode == 2 and "HTTP_CONCURRENCY must be a number from 1 to 1000" in refused.stderr


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


# ---- Google Cloud: alert policies -------------------------------------------------------------------------
ALERT_EMAIL = "ops@example.com"
_FILTER_TERM = re.compile(r'([\w.]+) = (?:"([^"]*)"|one_of\(([^)]*)\))')


def filter_terms(filter_: str) -> dict[str, set[str]]:
    """A Cloud Monitoring filter of ``key = "value"`` / ``key = one_of("a", "b")`` terms joined by AND: each key's
    accepted values."""
    terms = {}
    for part in filter_.split(" AND "):
        match = _FILTER_TERM.fullmatch(part.strip())
        assert match, f"not a term this test reads: {part!r}"
        key, value, values = match.groups()
        terms[key.replace(".labels.", ".label.")] = {value} if value is not None else set(json.loads(f"[{values}]"))
    return terms


def policy_conditions(policy: dict[str, Any]) -> list[tuple[dict[str, set[str]], dict[str, Any]]]:
    """Each threshold condition of a policy: its filter's terms, and the condition."""
    assert policy["combiner"] == "OR"
    found = []
    for condition in policy["conditions"]:
        threshold = condition["conditionThreshold"]
        assert threshold["comparison"] == "COMPARISON_GT" and threshold["duration"] == "0s"
        found.append((filter_terms(threshold["filter"]), threshold))
    return found


@dataclass
class Alerting:
    """A Google Cloud target's printed commands, run through the stand-ins with ALERT_EMAIL."""

    bench: DeployBench
    target: str
    variables: tuple[str, ...]  # make's variables besides ALERT_EMAIL and STAGE_DIR
    stage: Path
    recorded: Recorded

    def printout(self, *more: str) -> str:
        return self.bench.printout(self.target, *self.variables, *more)

    def run(self, script_text: str, **environ: str) -> list[list[str]]:
        """Run lines with bash (-euo pipefail) through the stand-ins; the tools' calls."""
        script = self.bench.work / "lines.sh"
        script.write_text(script_text, encoding="utf-8")
        self.bench.log.write_text("", encoding="utf-8")
        result = subprocess.run(
            ["bash", "-euo", "pipefail", str(script)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            env={**self.bench.environ(), **environ},
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        return [shlex.split(line) for line in self.bench.log.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module", params=["deploy-gcp", "deploy-cloudrun"])
def alerting(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Alerting:
    work = tmp_path_factory.mktemp(request.param)
    bench = DeployBench(work)
    variables = ("GCP_PROJECT=my-project", "INPUT_BUCKET=uploads-in", "OUTPUT_BUCKET=uploads-out")
    stage = work / "stage"
    recorded = bench.printed(
        request.param, *variables, f"ALERT_EMAIL={ALERT_EMAIL}", f"STAGE_DIR={stage}", written=stage
    )
    return Alerting(bench, request.param, variables, stage, recorded)


def _policies(recorded: Recorded, stage: Path) -> dict[str, dict[str, Any]]:
    """The policies the printed commands create: each create's file, as written by an earlier printed command."""
    creates = [c for c in recorded.of("gcloud") if c[1:4] == ["monitoring", "policies", "create"]]
    assert creates, "no alert policy is created"
    files = {}
    for create in creates:
        path = Path(_flags(create)["--policy-from-file"][0])
        assert path.parent == stage, path
        files[path.name] = json.loads(recorded.files[path.name])
    return files


def _services(commands: list[list[str]]) -> dict[str, int]:
    """The deployed functions or Cloud Run services, with their --timeout in seconds."""
    deployed = {}
    for command in commands:
        if command[1:3] in (["functions", "deploy"], ["run", "deploy"]):
            deployed[command[3]] = int(_flags(command)["--timeout"][0].removesuffix("s"))
    assert len(deployed) == 3, deployed
    return deployed


def test_gcp_every_dead_letter_topics_subscription_alerts_at_one_message(alerting: Alerting) -> None:
    recorded, stage = alerting.recorded, alerting.stage
    commands = recorded.of("gcloud")
    dead_letter_topics = {
        _flags(c)["--dead-letter-topic"][0] for c in commands if c[1:4] == ["pubsub", "subscriptions", "update"]
    }
    assert dead_letter_topics == {"zh-en-translate-failed-events"}
    # a subscription keeps what lands in each dead-letter topic (without one, a topic's messages are dropped)
    kept = {
        c[4]
        for c in commands
        if c[1:4] == ["pubsub", "subscriptions", "create"] and _flags(c)["--topic"][0] in dead_letter_topics
    }
    assert kept == {"zh-en-translate-failed-events-kept"}
    watched = set()
    for policy in _policies(recorded, stage).values():
        for terms, threshold in policy_conditions(policy):
            if terms.get("metric.type") == {"pubsub.googleapis.com/subscription/num_undelivered_messages"}:
                assert terms["resource.type"] == {"pubsub_subscription"}
                assert threshold["thresholdValue"] == 0
                watched |= terms["resource.label.subscription_id"]
    assert kept <= watched, f"no policy watches {kept - watched}"


def test_gcp_server_errors_of_every_service_open_an_incident(alerting: Alerting) -> None:
    recorded, stage = alerting.recorded, alerting.stage
    services = _services(recorded.of("gcloud"))
    watched = set()
    for policy in _policies(recorded, stage).values():
        for terms, threshold in policy_conditions(policy):
            if terms.get("metric.type") == {"run.googleapis.com/request_count"}:
                # Cloud Functions (2nd gen) report their requests as the Cloud Run service of the same name
                assert terms["resource.type"] == {"cloud_run_revision"}
                assert terms["metric.label.response_code_class"] == {"5xx"}
                assert threshold["thresholdValue"] == 0
                (aggregation,) = threshold["aggregations"]
                assert aggregation["perSeriesAligner"] == "ALIGN_SUM"
                assert aggregation["groupByFields"] == ["resource.label.service_name"]  # one incident per service
                watched |= terms["resource.label.service_name"]
    assert watched == set(services)


def test_gcp_requests_past_80_percent_of_their_timeout_open_an_incident(alerting: Alerting) -> None:
    recorded, stage = alerting.recorded, alerting.stage
    services = _services(recorded.of("gcloud"))
    limits: dict[str, float] = {}
    for policy in _policies(recorded, stage).values():
        for terms, threshold in policy_conditions(policy):
            if terms.get("metric.type") == {"run.googleapis.com/request_latencies"}:
                assert terms["resource.type"] == {"cloud_run_revision"}
                assert threshold["aggregations"][0]["perSeriesAligner"] == "ALIGN_PERCENTILE_99"
                limits |= {service: threshold["thresholdValue"] for service in terms["resource.label.service_name"]}
    # milliseconds: 80 % of each service's own --timeout, as deployed
    assert limits == {service: 0.8 * timeout_s * 1000 for service, timeout_s in services.items()}
    assert sorted(set(services.values())) == [300, 540]


def test_gcp_alerts_mail_the_address_given_or_no_one(alerting: Alerting) -> None:
    recorded, stage = alerting.recorded, alerting.stage
    commands = recorded.of("gcloud")
    (create,) = [c for c in commands if c[1:5] == ["beta", "monitoring", "channels", "create"]]
    flags = _flags(create)
    assert flags["--type"] == ["email"] and flags["--channel-labels"] == [f"email_address={ALERT_EMAIL}"]
    assert flags["--user-labels"] == ["deployment=zh-en-translate"]
    # every policy notifies the channel just created (its name, as Google Cloud answered it)
    policies = [c for c in commands if c[1:4] == ["monitoring", "policies", "create"]]
    assert [_flags(c)["--notification-channels"] for c in policies] == [[CHANNEL]] * len(policies) == [[CHANNEL]] * 3
    for policy in _policies(recorded, stage).values():
        assert policy["documentation"]["content"] and "docs/operations.md" in policy["documentation"]["content"]
    # no address: no channel, and the policies notify no one
    silent = alerting.bench.printed(alerting.target, *alerting.variables).of("gcloud")
    assert not any(c[1:4] == ["beta", "monitoring", "channels"] for c in silent)
    assert [c[1:4] for c in silent if "--notification-channels" in c] == []
    assert sum(c[1:4] == ["monitoring", "policies", "create"] for c in silent) == 3


def test_gcp_a_second_deploy_replaces_its_policies_and_reuses_its_channel(alerting: Alerting) -> None:
    # GIVEN a project where an earlier deploy left a policy and a channel (what the stand-in's lists now answer)
    earlier = "projects/123456789/alertPolicies/7"
    printout = alerting.printout(f"ALERT_EMAIL={ALERT_EMAIL}", f"STAGE_DIR={alerting.stage}")
    calls = alerting.run(printout, **{STAND_IN_LISTED: earlier})
    monitoring = [c for c in calls if "monitoring" in c[1:3] and "list" not in c]
    # the earlier policy is deleted before the new ones are created; the channel found is used, none is created
    assert monitoring[0][1:4] == ["monitoring", "policies", "delete"] and monitoring[0][-1] == earlier
    assert [c[1:4] for c in monitoring[1:]] == [["monitoring", "policies", "create"]] * 3
    assert all(_flags(c)["--notification-channels"] == [earlier] for c in monitoring[1:])


def test_gcp_teardown_removes_the_policies_and_channels_it_made(alerting: Alerting) -> None:
    recorded, stage = alerting.recorded, alerting.stage
    lines = recorded.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# teardown"))
    teardown = [line.removeprefix("#   ") for line in lines[start + 1 :]]
    assert all(line.startswith("gcloud ") for line in teardown), teardown
    # the label every policy and the channel carry is the one the teardown's lists select
    labels = {
        f"userLabels.{key}={value}"
        for policy in _policies(recorded, stage).values()
        for key, value in policy["userLabels"].items()
    }
    (create,) = [c for c in recorded.of("gcloud") if c[1:5] == ["beta", "monitoring", "channels", "create"]]
    labels.add("userLabels." + _flags(create)["--user-labels"][0])
    assert labels == {"userLabels.deployment=zh-en-translate"}
    selected = {}
    for line in teardown:
        words = shlex.split(line)
        if "list" in words and "|" in words:
            selected[tuple(words[1 : words.index("list")])] = _flags(words)["--filter"][0]
    (label,) = labels
    assert selected == {("monitoring", "policies"): label, ("beta", "monitoring", "channels"): label}
    # run as printed (the lists answering one resource each): each resource found is deleted
    listed = "projects/123456789/listed/1"
    deletes = [c for c in alerting.run("\n".join(teardown) + "\n", **{STAND_IN_LISTED: listed}) if "delete" in c]
    assert [c[:-1] for c in deletes if c[-1] == listed] == [
        ["gcloud", "monitoring", "policies", "delete", "--project", "my-project", "--quiet"],
        ["gcloud", "beta", "monitoring", "channels", "delete", "--project", "my-project", "--force", "--quiet"],
    ]
    kept = ["gcloud", "pubsub", "subscriptions", "delete", "zh-en-translate-failed-events-kept", "--project"]
    assert [*kept, "my-project", "--quiet"] in deletes


# ---- Google Cloud: log-based metrics (handler.metrics' figures on the JSON lines) ----------------------------------
_JSON_FIELD = re.compile(r"jsonPayload\.([a-z_]+)")
# the fields of the lines a metric may read besides the figures: which logger wrote it, the route, the error code
_LINE_FIELDS = {"logger", "route", "error_code"}


def _log_metrics(recorded: Recorded, stage: Path) -> dict[str, dict[str, Any]]:
    """The log-based metrics the printed commands create, by name: each create's file, written by a printed command."""
    created = {}
    for call in recorded.of("gcloud"):
        if call[1:4] == ["logging", "metrics", "create"]:
            path = Path(_flags(call)["--config-from-file"][0])
            assert path.parent == stage, path
            body = json.loads(recorded.files[path.name])
            assert body["name"] == call[4]
            created[call[4]] = body
    assert created, "no log-based metric is created"
    return created


def test_gcp_log_based_metrics_read_every_figure_of_the_functions_lines(alerting: Alerting) -> None:
    from handler.metrics import FIGURES

    services = set(_services(alerting.recorded.of("gcloud")))
    read: set[str] = set()
    for name, metric in _log_metrics(alerting.recorded, alerting.stage).items():
        assert name.startswith("zh-en-translate-")
        where = metric["filter"]
        # the access lines and the event lines (handler.metrics) of this deployment's three services
        assert 'jsonPayload.logger=("handler.access" OR "handler.metrics")' in where
        assert all(f'"{service}"' in where for service in services)
        fields = set(_JSON_FIELD.findall(where + metric.get("valueExtractor", "")))
        fields |= {
            field for extractor in metric["labelExtractors"].values() for field in _JSON_FIELD.findall(extractor)
        }
        assert fields <= {figure.field for figure in FIGURES} | _LINE_FIELDS, f"{name} reads a field no line has"
        read |= fields
        descriptor = metric["metricDescriptor"]
        assert descriptor["metricKind"] == "DELTA"
        assert [label["key"] for label in descriptor["labels"]] == list(metric["labelExtractors"])
        if "valueExtractor" in metric:  # a figure summed: the distribution of its values
            assert descriptor["valueType"] == "DISTRIBUTION" and "bucketOptions" in metric
        else:  # lines counted
            assert descriptor["valueType"] == "INT64"
    # every figure but the requests themselves and their duration (Cloud Run's own request metrics) is read
    assert {figure.field for figure in FIGURES} - {"requests", "duration_ms"} <= read


def test_gcp_log_based_metrics_are_updated_by_a_second_deploy_and_removed_by_the_teardown(alerting: Alerting) -> None:
    created = set(_log_metrics(alerting.recorded, alerting.stage))
    printout = alerting.printout(f"STAGE_DIR={alerting.stage}")
    # each is created when describing it fails (a new project), else updated from the same file
    lines = [line for line in printout.splitlines() if line.startswith("if gcloud logging metrics describe ")]
    assert len(lines) == len(created)
    for line in lines:
        name = shlex.split(line)[5]
        file = f'--config-from-file "$STAGE_DIR/log-metric-{name}.json"'
        assert f"then gcloud logging metrics update {name} --project my-project {file}; else" in line
    teardown = printout[printout.index("# teardown") :]
    deleted = set(re.findall(r"gcloud logging metrics delete (\S+) --project my-project --quiet", teardown))
    assert deleted == created


def test_gcp_env_files_name_the_project_for_the_trace_field(alerting: Alerting) -> None:
    env_files = [name for name in alerting.recorded.files if re.fullmatch(r"env-[a-z-]+\.yaml", name)]
    assert env_files
    for name in env_files:
        assert yaml.safe_load(alerting.recorded.files[name])["GOOGLE_CLOUD_PROJECT"] == "my-project", name
