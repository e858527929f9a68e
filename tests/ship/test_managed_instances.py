"""Lambda Managed Instances in the SAM template: off by default, on with a capacity provider, through the real SAM
transform (aws-sam-translator, offline).

cfn-lint (tests/ship/test_infra.py) checks the template against the resource schemas but does not run the SAM
transform, and the transform refuses an intrinsic function around a function's ``CapacityProviderConfig`` (it
validates the property's fields). The template therefore lists ``AWS::LanguageExtensions`` before the SAM transform:
CloudFormation runs it first, and it resolves an ``Fn::If`` whose condition the parameters decide. Here that step is
done by ``resolve_conditions`` (the template's conditions evaluated from the parameter values, each ``Fn::If``
replaced by its branch, ``AWS::NoValue`` dropped), then ``samtranslator`` transforms the result as CloudFormation's
SAM transform would.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

from tests.ship.dockerfile_model import REPO_ROOT

TEMPLATE = REPO_ROOT / "infra" / "aws" / "template.yaml"
IMAGE_URI = "123456789012.dkr.ecr.us-east-1.amazonaws.com/zh-en-translate:latest"  # what sam build sets
PROVIDER_ARN = "arn:aws:lambda:us-east-1:123456789012:capacity-provider:translate"
BUCKETS = {"InputBucketName": "zh-in", "OutputBucketName": "en-out"}
NO_VALUE = {"Ref": "AWS::NoValue"}


def template() -> dict[str, Any]:
    return dict(yaml_parse(TEMPLATE.read_text(encoding="utf-8")))


def parameter_values(parsed: dict[str, Any], overrides: dict[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, declared in parsed["Parameters"].items():
        raw = overrides.get(name, declared.get("Default"))
        if raw is not None and declared["Type"] == "CommaDelimitedList":
            raw = [item.strip() for item in str(raw).split(",")]
        values[name] = raw
    return values


def evaluate(expression: Any, values: dict[str, Any], conditions: dict[str, Any]) -> Any:
    """The value of a condition expression (the functions the template's conditions use)."""
    if not isinstance(expression, dict):
        return expression
    ((function, argument),) = expression.items()
    if function == "Ref":
        return values[argument]
    if function == "Condition":
        return evaluate(conditions[argument], values, conditions)
    arguments = [evaluate(item, values, conditions) for item in argument]
    if function == "Fn::Equals":
        return str(arguments[0]) == str(arguments[1])
    if function == "Fn::Not":
        return not arguments[0]
    if function == "Fn::Or":
        return any(arguments)
    if function == "Fn::And":
        return all(arguments)
    if function == "Fn::Join":
        return str(arguments[0]).join(str(item) for item in arguments[1])
    raise AssertionError(f"a condition function this test does not evaluate: {function}")


def _choose(node: Any, truth: dict[str, bool]) -> Any:
    if isinstance(node, dict):
        if set(node) == {"Fn::If"}:
            name, when_true, when_false = node["Fn::If"]
            return _choose(when_true if truth[name] else when_false, truth)
        chosen = {key: _choose(value, truth) for key, value in node.items()}
        return {key: value for key, value in chosen.items() if value != NO_VALUE}
    if isinstance(node, list):
        return [item for item in (_choose(item, truth) for item in node) if item != NO_VALUE]
    return node


def resolve_conditions(parsed: dict[str, Any], overrides: dict[str, str]) -> dict[str, Any]:
    """What ``AWS::LanguageExtensions`` hands the SAM transform: every ``Fn::If`` of the resources and outputs
    resolved with these parameter values (resources whose condition is false stay: CloudFormation drops them later)."""
    values = parameter_values(parsed, overrides)
    conditions = parsed.get("Conditions", {})
    truth = {name: bool(evaluate(expression, values, conditions)) for name, expression in conditions.items()}
    resolved = copy.deepcopy(parsed)
    resolved["Resources"] = _choose(resolved["Resources"], truth)
    resolved["Outputs"] = _choose(resolved.get("Outputs", {}), truth)
    resolved["Transform"] = "AWS::Serverless-2016-10-31"
    return resolved


class NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


def sam_transform(parsed: dict[str, Any], overrides: dict[str, str]) -> dict[str, Any]:
    """The CloudFormation the SAM transform makes of ``parsed``, with the image ``sam build`` would have set."""
    for resource in parsed["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["ImageUri"] = IMAGE_URI
    return dict(transform(parsed, {**BUCKETS, **overrides}, NoManagedPolicies()))


@pytest.fixture(autouse=True)
def _region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def lambda_functions(transformed: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in transformed["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]


def test_the_language_extensions_transform_runs_before_sams() -> None:
    assert template()["Transform"] == ["AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"]


def test_by_default_the_function_is_on_demand_lambda() -> None:
    parsed = template()
    overrides = dict(BUCKETS)
    transformed = sam_transform(resolve_conditions(parsed, overrides), overrides)
    (function,) = lambda_functions(transformed)
    assert "CapacityProviderConfig" not in function["Properties"] and "LoggingConfig" not in function["Properties"]
    assert parsed["Resources"]["CapacityProvider"]["Condition"] == "CreateCapacityProvider"
    truth = resolved_truth(parsed, overrides)
    assert not truth["ManagedInstances"] and not truth["CreateCapacityProvider"]


def resolved_truth(parsed: dict[str, Any], overrides: dict[str, str]) -> dict[str, bool]:
    values = parameter_values(parsed, overrides)
    conditions = parsed["Conditions"]
    return {name: bool(evaluate(expression, values, conditions)) for name, expression in conditions.items()}


def test_an_existing_capacity_provider_runs_the_function_with_its_concurrency() -> None:
    overrides = {**BUCKETS, "CapacityProviderArn": PROVIDER_ARN, "PerEnvironmentMaxConcurrency": "32"}
    transformed = sam_transform(resolve_conditions(template(), overrides), overrides)
    (function,) = lambda_functions(transformed)
    config = function["Properties"]["CapacityProviderConfig"]["LambdaManagedInstancesCapacityProviderConfig"]
    assert config == {
        "CapacityProviderArn": {"Ref": "CapacityProviderArn"},  # the parameter (PROVIDER_ARN) CloudFormation passes
        "PerExecutionEnvironmentMaxConcurrency": {"Ref": "PerEnvironmentMaxConcurrency"},
    }
    assert function["Properties"]["MemorySize"] == 2048 and function["Properties"]["PackageType"] == "Image"
    assert function["Properties"]["LoggingConfig"] == {"LogFormat": "JSON"}  # Managed Instances take JSON logs only


def test_the_stack_can_create_the_capacity_provider() -> None:
    parsed = template()
    overrides = {
        **BUCKETS,
        "CapacityProviderSubnetIds": "subnet-1,subnet-2",
        "CapacityProviderSecurityGroupIds": "sg-1",
    }
    assert resolved_truth(parsed, overrides)["ManagedInstances"]
    transformed = sam_transform(resolve_conditions(parsed, overrides), overrides)
    (function,) = lambda_functions(transformed)
    config = function["Properties"]["CapacityProviderConfig"]["LambdaManagedInstancesCapacityProviderConfig"]
    assert config["CapacityProviderArn"] == {"Fn::GetAtt": ["CapacityProvider", "Arn"]}
    provider = transformed["Resources"]["CapacityProvider"]
    assert provider["Type"] == "AWS::Lambda::CapacityProvider" and provider["Condition"] == "CreateCapacityProvider"
    assert provider["Properties"]["VpcConfig"] == {
        "SubnetIds": {"Ref": "CapacityProviderSubnetIds"},
        "SecurityGroupIds": {"Ref": "CapacityProviderSecurityGroupIds"},
    }
    assert provider["Properties"]["InstanceRequirements"]["Architectures"] == function["Properties"]["Architectures"]
    role = transformed["Resources"]["CapacityProviderOperatorRole"]["Properties"]
    assert role["ManagedPolicyArns"] == [
        {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AWSLambdaManagedEC2ResourceOperator"}
    ]


def test_without_language_extensions_sam_refuses_the_conditional_capacity_provider() -> None:
    """Why the template lists AWS::LanguageExtensions: the SAM transform alone cannot take the !If."""
    parsed = template()
    parsed["Transform"] = "AWS::Serverless-2016-10-31"
    with pytest.raises(InvalidDocumentException, match="CapacityProviderConfig"):
        sam_transform(parsed, dict(BUCKETS))
