"""The pages tell the truth about the code: README.md and docs/*.md against the code they describe.

* every figure a page quotes from ``make bench``'s report is the report's (``bench.pipeline.quoted``);
* docs/deployment.md's permissions and triggers tables are the SAM template's and ``infra/gcp/deploy.sh``'s;
* every route, option, environment variable, file suffix list and repository path a page names exists in the code,
  read from the code itself (the routers' route tables, ``OPTION_NAMES``, the variables the code reads,
  ``FILE_SUFFIXES``, the file tree), so a new feature needs no edit here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from bench.pipeline import cost, quoted
from handler import config as runtime_config
from handler.adapters import cli
from handler.api import router
from handler.api.compat import deepl, libretranslate
from handler.api.own_shapes import TranslateRequest
from handler.config import RuntimeConfig
from handler.formats import FILE_SUFFIXES, FORMATS, format_for
from handler.service import OPTION_NAMES
from tests.ship.dockerfile_model import REPO_ROOT
from tests.ship.test_front_door import variables_the_code_reads

PAGES = quoted.quoting_pages(REPO_ROOT)
REPORT = REPO_ROOT / "docs" / "benchmarks.md"
DEPLOYMENT = REPO_ROOT / "docs" / "deployment.md"
TEMPLATE = REPO_ROOT / "infra" / "aws" / "template.yaml"
GCP_DEPLOY = REPO_ROOT / "infra" / "gcp" / "deploy.sh"
GCP_ENV = REPO_ROOT / "infra" / "gcp" / "env.yaml"


def _page_text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _name(page: Path) -> str:
    return str(page.relative_to(REPO_ROOT)) if page.is_relative_to(REPO_ROOT) else page.name


# ---- figures quoted from the benchmark report -------------------------------------------------------------------


def stale_quotes(pages: list[Path], report: str) -> list[str]:
    problems = []
    for page in pages:
        try:
            problems += [
                f"{_name(page)}: '{address}' quotes {old!r}, the report says {new!r}"
                for address, old, new in quoted.stale(_page_text(page), report)
            ]
        except quoted.QuoteError as error:
            problems.append(f"{_name(page)}: {error}")
    return problems


def test_every_figure_a_page_quotes_is_the_reports() -> None:
    report = REPORT.read_text(encoding="utf-8")
    assert not stale_quotes(PAGES, report), "\n".join(stale_quotes(PAGES, report)) + (
        "\n(make bench rewrites them; by hand: python -c 'from bench.pipeline import quoted; from pathlib import Path; "
        'quoted.fill_pages(Path("."), Path("docs/benchmarks.md"))\')'
    )
    assert sum(len(quoted.QUOTE.findall(_page_text(page))) for page in PAGES) >= 50  # the pages do quote it


def test_a_quote_that_drifted_or_names_nothing_is_found(tmp_path: Path) -> None:
    report = REPORT.read_text(encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("cold start <!-- bench: random Marian :: cold start :: this runtime -->0.6 s<!-- /bench -->\n")
    (problem,) = stale_quotes([page], report)
    assert problem.startswith("page.md: 'random Marian :: cold start :: this runtime' quotes '0.6 s', the report says")
    page.write_text("<!-- bench: random Marian :: no such row :: this runtime -->1<!-- /bench -->\n")
    assert "no row or bullet starts with 'no such row'" in stale_quotes([page], report)[0]
    filled = quoted.fill(page.read_text().replace("no such row", "peak RSS"), report)
    assert quoted.stale(filled, report) == []


def _deploy_value(name: str) -> str:
    match = re.search(rf'^{name}="([^"$]*)"', GCP_DEPLOY.read_text(encoding="utf-8"), re.M)
    assert match, f"infra/gcp/deploy.sh sets no {name}"
    return match.group(1)


def test_the_cost_table_prices_cloud_run_as_deploy_sh_deploys_it() -> None:
    assert str(cost.CLOUD_RUN_VCPUS) == _deploy_value("CPU")
    assert f"{cost.CLOUD_RUN_GIB:g}Gi" == _deploy_value("MEMORY")
    report = REPORT.read_text(encoding="utf-8")
    assert f"| Cloud Run {cost.CLOUD_RUN_VCPUS} vCPU / {cost.CLOUD_RUN_GIB:g} GiB |" in report
    # the report's cost part is what bench.pipeline.cost makes of the report's measured speeds, at today's prices
    assert cost.reprice(report) == report, "prices or platform settings changed: python -m bench.pipeline.cost"


# ---- docs/deployment.md: permissions and triggers ----------------------------------------------------------------


class _CloudFormationLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short forms (!Ref, !Sub, ...) read as {"Ref": ...} / {"Fn::Sub": ...}."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    name = suffix if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        return {name: loader.construct_scalar(node)}
    if isinstance(node, yaml.SequenceNode):
        return {name: loader.construct_sequence(node, deep=True)}
    return {name: loader.construct_mapping(node, deep=True)}  # type: ignore[arg-type]


_CloudFormationLoader.add_multi_constructor("!", _tag)


def _function() -> dict[str, Any]:
    template = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CloudFormationLoader)  # noqa: S506
    (function,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::Function"]
    return function


def table(text: str, *header: str, nth: int | None = None) -> list[list[str]]:
    """The rows of the Markdown table whose header row is ``header`` (the ``nth`` of several such tables)."""
    lines = text.splitlines()
    wanted = "| " + " | ".join(header) + " |"
    starts = [i for i, line in enumerate(lines) if line.strip() == wanted]
    assert len(starts) == 1 or (nth is not None and nth < len(starts)), f"{len(starts)} tables headed {wanted}"
    rows = []
    for line in lines[starts[nth or 0] + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def _code(cell: str) -> str:
    """A cell's text with its backticks removed."""
    return cell.replace("`", "").strip()


def aws_statements(function: dict[str, Any]) -> set[tuple[str, str, str]]:
    found = set()
    for policy in function["Properties"]["Policies"]:
        for statement in policy["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resource = statement["Resource"]["Fn::Sub"].removeprefix("arn:${AWS::Partition}:s3:::")
            found |= {(statement["Sid"], action, resource) for action in actions}
    return found


def aws_triggers(function: dict[str, Any]) -> set[tuple[str, str, str]]:
    found = set()
    for name, event in function["Properties"]["Events"].items():
        properties = event["Properties"]
        assert event["Type"] == "S3" and properties["Events"] == "s3:ObjectCreated:*", name
        rules = properties["Filter"]["S3Key"]["Rules"]
        keys = ", ".join(
            f"{rule['Name']} " + (f"${{{rule['Value']['Ref']}}}" if isinstance(rule["Value"], dict) else rule["Value"])
            for rule in rules
        )
        found.add((name, properties["Bucket"]["Ref"], keys))
    return found


def documented_aws_statements(page: str) -> set[tuple[str, str, str]]:
    return {(_code(s), _code(a), _code(r)) for s, a, r in table(page, "statement", "action", "resource")}


def documented_aws_triggers(page: str) -> set[tuple[str, str, str]]:
    return {(_code(e), _code(b), _code(k)) for e, b, k in table(page, "event", "bucket", "keys")}


def test_deployment_page_lists_exactly_the_templates_iam_statements() -> None:
    documented, granted = documented_aws_statements(_page_text(DEPLOYMENT)), aws_statements(_function())
    assert documented == granted, (
        f"not in the page: {granted - documented}; not in the template: {documented - granted}"
    )


def test_deployment_page_lists_exactly_the_templates_s3_triggers() -> None:
    documented, triggers = documented_aws_triggers(_page_text(DEPLOYMENT)), aws_triggers(_function())
    assert documented == triggers, (
        f"not in the page: {triggers - documented}; not in the template: {documented - triggers}"
    )


_COUNTED_TRIGGERS = re.compile(r"\b(\w+) upload triggers\b")
_NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()


def counted_upload_triggers(page: str) -> list[int | None]:
    """Each "N upload triggers" the page says, as a number (None: a word that is not one)."""
    counts: list[int | None] = []
    for word in _COUNTED_TRIGGERS.findall(page):
        if word.isdigit():
            counts.append(int(word))
        elif word.lower() in _NUMBER_WORDS:
            counts.append(_NUMBER_WORDS.index(word.lower()))
    return counts


def test_every_count_of_upload_triggers_is_the_templates() -> None:
    uploads = sum(1 for _, bucket, _ in aws_triggers(_function()) if bucket == "InputBucket")
    for page in sorted((REPO_ROOT / "docs").glob("*.md")) + [REPO_ROOT / "README.md"]:
        counts = counted_upload_triggers(_page_text(page))
        assert all(count == uploads for count in counts), f"{page.name} counts {counts}; the template has {uploads}"
    planted = _page_text(DEPLOYMENT).replace("the 17 upload triggers", "the six upload triggers")
    assert counted_upload_triggers(planted) == [6]


def test_a_planted_permission_or_trigger_is_caught() -> None:
    page = _page_text(DEPLOYMENT)
    planted = page.replace("| `ListOwnOutput` | `s3:ListBucket` |", "| `ListOwnOutput` | `s3:DeleteObject` |")
    assert documented_aws_statements(planted) != aws_statements(_function())
    planted = page.replace("| `DocxUploaded` | `InputBucket` | suffix `.docx` |\n", "")
    assert planted != page
    assert documented_aws_triggers(planted) != aws_triggers(_function())


GCP_NAMES = {"GCP_PROJECT": "proj-x", "INPUT_BUCKET": "in-bucket", "OUTPUT_BUCKET": "out-bucket"}


def _gcp_commands(platform: str = "functions") -> list[list[str]]:
    printed = subprocess.run(
        ["bash", str(GCP_DEPLOY), "print"],
        capture_output=True,
        text=True,
        env={**os.environ, **GCP_NAMES, "PLATFORM": platform, "FUNCTION_NAME": "zh-en-translate"},
        timeout=60,
        check=True,
    ).stdout
    commands = []
    for line in printed.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        words = shlex.split(line, posix=True)
        command: list[str] = []
        for word in [*words, "||"]:
            if word in ("||", "&&", ";"):
                if command:
                    commands.append(command)
                command = []
            else:
                command.append(word)
    return commands


def _flag(command: list[str], name: str) -> list[str]:
    return [command[i + 1] for i, word in enumerate(command[:-1]) if word == name]


def gcp_account_roles(commands: list[list[str]]) -> set[tuple[str, str, str]]:
    """(on, role, the prefix a condition limits it to or "") for every role the functions' account is given."""
    found = set()
    for command in commands:
        if (
            command[:2] not in (["gcloud", "storage"], ["gcloud", "projects"])
            or "add-iam-policy-binding" not in command
        ):
            continue
        member = _flag(command, "--member")[0]
        if not member.startswith("serviceAccount:zh-en-translate-fn@"):
            continue
        on = command[command.index("add-iam-policy-binding") + 1]
        on = "the project" if command[1] == "projects" else on
        condition = "".join(_flag(command, "--condition"))
        prefix = re.search(r"/objects/([^']*)'", condition)
        found.add((on, _flag(command, "--role")[0], prefix.group(1) if prefix else ""))
    return found


def _documented_gcp_roles(page: str) -> set[tuple[str, str, str]]:
    rows = set()
    for on, role, condition in table(page, "on", "role", "condition"):
        on = (
            _code(on)
            .replace("$INPUT_BUCKET", GCP_NAMES["INPUT_BUCKET"])
            .replace("$OUTPUT_BUCKET", GCP_NAMES["OUTPUT_BUCKET"])
        )
        prefixes = re.findall(r"\(`([^`]+)`\)", condition)
        rows.add((on, _code(role), prefixes[0] if prefixes else ""))
    return rows


def gcp_functions(commands: list[list[str]]) -> set[tuple[str, str, str]]:
    found = set()
    for command in commands:
        if command[:3] != ["gcloud", "functions", "deploy"]:
            continue
        filters = dict(value.split("=", 1) for value in _flag(command, "--trigger-event-filters"))
        trigger = "HTTP" if "--trigger-http" in command else f"{filters['type']} on {filters['bucket']}"
        found.add((command[3], _flag(command, "--entry-point")[0], trigger))
    return found


def _documented_gcp_functions(page: str) -> set[tuple[str, str, str]]:
    names = {"$INPUT_BUCKET": GCP_NAMES["INPUT_BUCKET"], "$OUTPUT_BUCKET": GCP_NAMES["OUTPUT_BUCKET"]}
    rows = set()
    for function, entry_point, trigger in table(page, "function", "entry point", "trigger"):
        trigger = _code(trigger)
        for placeholder, value in names.items():
            trigger = trigger.replace(placeholder, value)
        rows.add((_code(function).replace("$FUNCTION_NAME", "zh-en-translate"), _code(entry_point), trigger))
    return rows


def test_deployment_page_lists_exactly_the_gcp_accounts_roles() -> None:
    documented, granted = _documented_gcp_roles(_page_text(DEPLOYMENT)), gcp_account_roles(_gcp_commands())
    assert documented == granted, f"not in the page: {granted - documented}; not in deploy.sh: {documented - granted}"
    document_prefix = yaml.safe_load(GCP_ENV.read_text(encoding="utf-8"))["TRANSLATE_DOCUMENT_PREFIX"]
    assert {prefix for _, _, prefix in granted} == {"", document_prefix}


def test_deployment_page_lists_exactly_the_gcp_functions_and_triggers() -> None:
    documented, deployed = _documented_gcp_functions(_page_text(DEPLOYMENT)), gcp_functions(_gcp_commands())
    assert documented == deployed, (
        f"not in the page: {deployed - documented}; not in deploy.sh: {documented - deployed}"
    )


def test_a_planted_gcp_role_is_caught() -> None:
    planted = _page_text(DEPLOYMENT).replace("(`_documents/`)", "(`_state/`)")
    assert _documented_gcp_roles(planted) != gcp_account_roles(_gcp_commands())


# ---- docs/operations.md: alarms and alert policies ---------------------------------------------------------------

OPERATIONS = REPO_ROOT / "docs" / "operations.md"
_AGGREGATIONS = {"ALIGN_MAX": "max", "ALIGN_SUM": "sum", "ALIGN_PERCENTILE_99": "99th percentile"}


def _template() -> dict[str, Any]:
    return yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CloudFormationLoader)  # noqa: S506


def _subject(value: dict[str, Any]) -> str:
    """The resource a dimension's value names: ``!Ref X`` or ``!GetAtt X.Attribute``."""
    if "Ref" in value:
        return str(value["Ref"])
    attribute = value["Fn::GetAtt"]
    return str(attribute.split(".")[0] if isinstance(attribute, str) else attribute[0])


def aws_alarms(template: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    """(alarm, namespace and metric, the resource it watches, when it fires) for every alarm of the template."""
    found = set()
    for name, resource in template["Resources"].items():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        alarm = resource["Properties"]
        assert alarm["ComparisonOperator"] == "GreaterThanThreshold", name
        if "Metrics" in alarm:  # metric math: one metric over the template's parameter
            (watched,) = [m for m in alarm["Metrics"] if "MetricStat" in m]
            (expression,) = [m["Expression"]["Fn::Sub"] for m in alarm["Metrics"] if "Expression" in m]
            match = re.fullmatch(rf"{watched['Id']} / \(\$\{{(\w+)\}} \* 1000\)", expression)
            assert match, f"{name}: an expression this page does not describe: {expression}"
            stat, metric = watched["MetricStat"], watched["MetricStat"]["Metric"]
            when = f"{stat['Stat'].lower()} over {stat['Period']} s > {alarm['Threshold'] * 100:g} % of {match[1]}"
        else:
            metric, stat = alarm, {"Stat": alarm["Statistic"], "Period": alarm["Period"]}
            when = f"{stat['Stat'].lower()} over {stat['Period']} s > {alarm['Threshold']:g}"
        (dimension,) = metric["Dimensions"]
        found.add((name, f"{metric['Namespace']} {metric['MetricName']}", _subject(dimension["Value"]), when))
    return found


def documented_aws_alarms(page: str) -> set[tuple[str, str, str, str]]:
    return {
        (_code(alarm), _code(metric), _code(watched), _code(when))
        for alarm, metric, watched, when in table(page, "alarm", "metric", "of", "fires when")
    }


def gcp_alert_conditions(folder: Path) -> set[tuple[str, str, frozenset[str], str]]:
    """(policy, metric and its label filters, the resources it watches, when it fires) for every condition of the
    policies ``infra/gcp/deploy.sh alerts`` writes ($FUNCTION_NAME for the function's name)."""
    written = subprocess.run(
        ["bash", str(GCP_DEPLOY), "alerts", str(folder)],
        capture_output=True,
        text=True,
        env={**os.environ, "FUNCTION_NAME": "zh-en-translate"},
        timeout=60,
    )
    assert written.returncode == 0, written.stderr

    def named(text: str) -> str:
        return text.replace("zh-en-translate", "$FUNCTION_NAME")

    found = set()
    for path in sorted(folder.glob("alert-*.json")):
        policy = json.loads(path.read_text(encoding="utf-8"))
        for condition in policy["conditions"]:
            threshold = condition["conditionThreshold"]
            terms = dict(re.findall(r'([\w.]+) = ("[^"]*"|one_of\([^)]*\))', threshold["filter"]))
            values = {k: json.loads(f"[{v.removeprefix('one_of(').removesuffix(')')}]") for k, v in terms.items()}
            metric = values.pop("metric.type")[0] + "".join(
                f" ({key.rsplit('.', 1)[1]} {' '.join(v)})" for key, v in values.items() if key.startswith("metric.")
            )
            watched = next(v for k, v in values.items() if k.startswith("resource.label."))
            (aggregation,) = threshold["aggregations"]
            unit = " ms" if "latencies" in metric else ""
            period = aggregation["alignmentPeriod"].removesuffix("s")
            aggregated = _AGGREGATIONS[aggregation["perSeriesAligner"]]
            when = f"{aggregated} over {period} s > {threshold['thresholdValue']:g}{unit}"
            if aggregation.get("groupByFields") == ["resource.label.service_name"]:
                when += ", per service"
            found.add((named(policy["displayName"]), metric, frozenset(named(w) for w in watched), when))
    assert len(found) >= 4, found
    return found


def documented_gcp_alerts(page: str) -> set[tuple[str, str, frozenset[str], str]]:
    return {
        (_code(policy), _code(metric), frozenset(_code(name) for name in watched.split(",")), _code(when))
        for policy, metric, watched, when in table(page, "alert policy", "metric", "of", "fires when")
    }


def test_operations_page_lists_exactly_the_templates_alarms() -> None:
    documented, alarms = documented_aws_alarms(_page_text(OPERATIONS)), aws_alarms(_template())
    assert documented == alarms, f"not in the page: {alarms - documented}; not in the template: {documented - alarms}"


def test_operations_page_lists_exactly_the_gcp_alert_policies(tmp_path: Path) -> None:
    documented, policies = documented_gcp_alerts(_page_text(OPERATIONS)), gcp_alert_conditions(tmp_path)
    assert documented == policies, (
        f"not in the page: {policies - documented}; not in deploy.sh: {documented - policies}"
    )


def test_a_planted_alarm_or_alert_threshold_is_caught(tmp_path: Path) -> None:
    page = _page_text(OPERATIONS)
    planted = page.replace(
        "| sum over 300 s > 0 |\n| `FunctionThrottlesAlarm`", "| sum over 60 s > 0 |\n| `FunctionThrottlesAlarm`"
    )
    assert planted != page and documented_aws_alarms(planted) != aws_alarms(_template())
    planted = page.replace("> 240000 ms |", "> 300000 ms |")
    assert planted != page and documented_gcp_alerts(planted) != gcp_alert_conditions(tmp_path)


def test_every_alarm_and_policy_links_to_a_section_of_the_operations_page(tmp_path: Path) -> None:
    headings = {
        re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in _page_text(OPERATIONS).splitlines()
        if line.startswith("#")
    }
    gcp_alert_conditions(tmp_path)  # writes the policies
    texts = [
        resource["Properties"]["AlarmDescription"]
        for resource in _template()["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
    ] + [json.loads(path.read_text(encoding="utf-8"))["documentation"]["content"] for path in tmp_path.glob("*.json")]
    assert len(texts) >= 7
    for text in texts:
        links = re.findall(r"docs/operations\.md#([\w-]+)", text)
        assert len(links) == 1 and links[0] in headings, f"{links} (sections: {sorted(headings)}) in: {text}"


# ---- names the pages use ----------------------------------------------------------------------------------------

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
_ROUTE = re.compile(rf"`((?:{'|'.join(METHODS)}) )?(/[A-Za-z_][^`\s?]*)[^`]*`")
_PLACEHOLDER_SEGMENT = re.compile(r"[{<][^/]*")


def _shape(path: str) -> str:
    """A route with every placeholder segment ({id}, <token>-<name>) as *."""
    return "/".join("*" if _PLACEHOLDER_SEGMENT.search(segment) else segment for segment in path.rstrip("/").split("/"))


def real_routes() -> dict[str, set[str]]:
    """Every route the HTTP API answers, its placeholders as *, with its methods (HEAD and OPTIONS included)."""
    routes: dict[str, set[str]] = {}
    for table_ in (router.ROUTES, deepl.ROUTES, libretranslate.ROUTES):
        for path, methods in table_.items():
            routes.setdefault(_shape(path) or "/", set()).update(methods)
    for methods in routes.values():
        if "GET" in methods:
            methods.add("HEAD")
        methods.add("OPTIONS")
    return routes


def route_problems(page_name: str, text: str, routes: dict[str, set[str]]) -> list[str]:
    """A backticked path whose first segment is a route's (``/v2/...``, ``/translate...``) must be a route; one
    opening a table row (``| `POST /x` |``), listed as a route, must be answered with that method."""
    first_segments = {route.split("/")[1] for route in routes if route != "/"}
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in _ROUTE.finditer(line):
            method, path = (match.group(1) or "").strip(), match.group(2)
            shape = _shape(path)
            if shape.split("/")[1] not in first_segments and not method:
                continue
            if shape not in routes:
                problems.append(f"{page_name}:{number}: `{match.group(0).strip('`')}` is no route ({sorted(routes)})")
            elif method and line.startswith(f"| {match.group(0)}") and method not in routes[shape]:
                problems.append(f"{page_name}:{number}: {path} does not answer {method} ({sorted(routes[shape])})")
    return problems


def test_every_route_a_page_names_exists() -> None:
    routes = real_routes()
    problems = [problem for page in PAGES for problem in route_problems(_name(page), _page_text(page), routes)]
    assert not problems, "\n".join(problems)


def test_a_planted_route_is_caught() -> None:
    routes = real_routes()
    assert route_problems("x.md", "| `POST /v2/documents` | uploads |", routes)
    assert route_problems("x.md", "| `GET /v2/document` | uploads |", routes)
    assert not route_problems("x.md", "| `POST /v2/document/{id}/result` | ... |", routes)


# the body's own fields beside the options, as its shape declares them: the texts and the flags (spans, stream, ...)
REQUEST_FIELDS = set(TranslateRequest.PARAMS)
API_PAGE = REPO_ROOT / "docs" / "api.md"
_OWN_API_BODY = re.compile(r"curl [^\n]*?/translate '?[^\n]*\n?[^\n]*?-d '(\{.*?\})'\s*$", re.M)


def option_problems(page: str) -> list[str]:
    """The options table of docs/api.md names exactly the request's options and fields; every JSON body sent to
    this server's ``POST /translate`` in a page's example uses only them."""
    documented = {_code(row[0]) for row in table(page, "option", "values", "default")}
    problems = [
        f"docs/api.md's options table names {name!r}, no option"
        for name in documented - {*OPTION_NAMES, *REQUEST_FIELDS}
    ]
    problems += [f"docs/api.md's options table lacks the option {name!r}" for name in set(OPTION_NAMES) - documented]
    return problems


def example_body_problems(page_name: str, text: str) -> list[str]:
    problems = []
    for found in _OWN_API_BODY.finditer(text):
        try:
            fields = json.loads(found.group(1))
        except json.JSONDecodeError:
            continue  # an example of a malformed body
        if not isinstance(fields, dict) or "q" in fields:
            continue  # LibreTranslate's /translate
        unknown = set(fields) - {*OPTION_NAMES, *REQUEST_FIELDS}
        shown = text[found.end() :].split("\n", 2)[1:2]  # the line after the command: what it prints
        shows_the_refusal = bool(shown) and "unknown option" in shown[0]
        if unknown and not shows_the_refusal:  # an example of the refusal names its unknown option on purpose
            problems.append(f"{page_name}: an example sends {sorted(unknown)}, which no option or field is")
    return problems


def test_the_options_pages_name_are_the_requests() -> None:
    problems = option_problems(_page_text(API_PAGE))
    problems += [problem for page in PAGES for problem in example_body_problems(_name(page), _page_text(page))]
    assert not problems, "\n".join(problems)


def test_a_planted_option_is_caught() -> None:
    page = _page_text(API_PAGE)
    assert option_problems(page.replace("| `beam_size` |", "| `beam_width` |"))
    assert example_body_problems("x.md", """curl -s http://h/translate -d '{"text": "你好", "beam": 1}'\n""")
    refused = (
        """curl -s http://h/translate -d '{"text": "你好", "beam": 1}'\n# 400 {"error": "unknown option beam"}\n"""
    )
    assert not example_body_problems("x.md", refused)


_TRANSLATE_VARIABLE = re.compile(r"\bTRANSLATE_[A-Z0-9_]*[A-Z0-9]\b")
_READ_IN_PYTHON = re.compile(r"""(?:environ|env)(?:\.get|\.setdefault)?\(\s*["'](TRANSLATE_[A-Z0-9_]+)["']""")
_ENV_CONSTANT = re.compile(r"""^\w*ENV\w* = ["'](TRANSLATE_[A-Z0-9_]+)["']""", re.M)


def translate_variables_in_code() -> set[str]:
    """The TRANSLATE_* variables the runtime and the infra scripts read (tests/ship/test_front_door.py), and those
    build/ and bench/ read."""
    found = {name for name in variables_the_code_reads() if name.startswith("TRANSLATE_")}
    for folder in ("build", "bench"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            found |= set(_READ_IN_PYTHON.findall(text)) | set(_ENV_CONSTANT.findall(text))
    return found


def variable_problems(page_name: str, text: str, known: set[str]) -> list[str]:
    return [
        f"{page_name}:{number}: {name} is read nowhere in the code"
        for number, line in enumerate(text.splitlines(), 1)
        for name in _TRANSLATE_VARIABLE.findall(line)
        if name not in known
    ]


def test_every_translate_variable_a_page_names_is_read_by_the_code() -> None:
    known = translate_variables_in_code()
    problems = [problem for page in PAGES for problem in variable_problems(_name(page), _page_text(page), known)]
    assert not problems, "\n".join(problems)


def test_a_planted_variable_is_caught() -> None:
    assert variable_problems("x.md", "set `TRANSLATE_MAX_CHARACTERS`", translate_variables_in_code())


_SUFFIX = re.compile(r"`(\.[a-z0-9]+)`")
SUPPORTED_FORMATS = {format_for(f"x{suffix}") for suffix in FILE_SUFFIXES}


def suffix_problems(page_name: str, text: str) -> list[str]:
    """A line naming the suffixes of five or more formats lists the supported ones: all of them, nothing else."""
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        suffixes = set(_SUFFIX.findall(line))
        formats = {format_for(f"x{suffix}") for suffix in suffixes & set(FILE_SUFFIXES)}
        if len(formats) < 5:
            continue
        if formats != SUPPORTED_FORMATS:
            missing = sorted(suffix for suffix in FILE_SUFFIXES if format_for(f"x{suffix}") not in formats)
            problems.append(f"{page_name}:{number}: lists the file formats without {missing}")
    return problems


def test_every_list_of_file_formats_is_complete() -> None:
    problems = [problem for page in PAGES for problem in suffix_problems(_name(page), _page_text(page))]
    assert not problems, "\n".join(problems)


def test_a_planted_incomplete_format_list_is_caught() -> None:
    listed = [f"`{fmt.suffixes[0]}`" for fmt in FORMATS]
    assert not suffix_problems("x.md", f"Upload a {', '.join(listed)} file")
    for left_out in range(len(listed)):
        assert suffix_problems("x.md", f"Upload a {', '.join(listed[:left_out] + listed[left_out + 1 :])} file")


_REPO_PATH = re.compile(r"(?<![\w/.~$-])((?:handler|build|bench|tests|infra|requirements|data)/[\w./-]*[\w/])")
_MODULE = re.compile(r"(?<![\w/.])((?:handler|build|bench|tests)(?:\.[A-Za-z_]\w*)+)")
FILE_EXTENSIONS = {"py", "txt", "in", "md", "json", "yaml", "sh", "html"}  # build.txt is a file, not a module


def _quoted_names() -> set[str]:
    """Dotted names the runtime spells as strings: its loggers (``handler.access``)."""
    names = set()
    for path in (REPO_ROOT / "handler").rglob("*.py"):
        names |= set(re.findall(r"""getLogger\(\s*["']([\w.]+)["']""", path.read_text(encoding="utf-8")))
    return names


def _module_file(dotted: str) -> Path | None:
    base = REPO_ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_exists(dotted: str) -> bool:
    """A module of the repository, or a name defined in one (``handler.storage.files.FILE_SUFFIXES``)."""
    if _module_file(dotted) is not None:
        return True
    module, _, attribute = dotted.rpartition(".")
    source = _module_file(module) if module else None
    if source is None:
        return False
    return re.search(rf"^\s*(?:def |class |async def )?{re.escape(attribute)}\b", source.read_text(), re.M) is not None


def path_problems(page_name: str, text: str) -> list[str]:
    """Every repository path (``handler/...``, ``tests/...``, ...) and module (``handler.storage.files``, a name
    in one, a logger) a page names exists; mutmut's mutant names (``x_name__mutmut_3``) are not names."""
    problems = []
    loggers = _quoted_names()
    for number, line in enumerate(text.splitlines(), 1):
        for path in _REPO_PATH.findall(line):
            if not (REPO_ROOT / path.rstrip(".")).exists() and not any(REPO_ROOT.glob(path)):
                problems.append(f"{page_name}:{number}: {path} does not exist")
        for dotted in _MODULE.findall(line):
            dotted = dotted.rstrip(".")
            if "mutmut" in dotted or dotted.rpartition(".")[2] in FILE_EXTENSIONS or dotted in loggers:
                continue
            if not module_exists(dotted):
                problems.append(f"{page_name}:{number}: {dotted} is no module or name in one")
    return problems


def test_every_repository_path_and_module_a_page_names_exists() -> None:
    problems = [problem for page in PAGES for problem in path_problems(_name(page), _page_text(page))]
    assert not problems, "\n".join(problems)


def test_a_planted_path_or_module_is_caught() -> None:
    assert path_problems("x.md", "see `tests/ship/test_no_such_file.py`")
    assert path_problems("x.md", "`handler.storage.no_such_module`")
    assert path_problems("x.md", "`handler.storage.files.NO_SUCH_NAME`")
    assert not path_problems("x.md", "`handler.formats.FILE_SUFFIXES` in handler/formats/__init__.py")


_LAYER_ROW = re.compile(r"^\| (?:`(handler/\w+/)`|`handler/` core|core) \| ([^|]*) \|", re.M)


def _modules_in(folder: Path) -> set[str]:
    """A folder's modules and packages as a page names them: ``service``, ``compat/``."""
    modules = {path.stem for path in folder.glob("*.py") if not path.name.startswith("__")}
    return modules | {f"{path.name}/" for path in folder.iterdir() if (path / "__init__.py").is_file()}


def layer_problems(page_name: str, text: str) -> list[str]:
    """A layer table's row (`` `handler/text/` | modules | ... ``) names every module of that folder, and every
    module it names is one of that folder's (or of its packages)."""
    problems = []
    for folder_name, cell in _LAYER_ROW.findall(text):
        folder = REPO_ROOT / (folder_name or "handler/")  # no folder: the core, handler/'s own modules
        named = {name for name in re.findall(r"`([a-z_]+/?)`", cell)}
        modules = _modules_in(folder) if folder_name else {m for m in _modules_in(folder) if not m.endswith("/")}
        everywhere = {
            name for package in [folder, *folder.rglob("*/")] if package.is_dir() for name in _modules_in(package)
        }
        if missing := modules - named:
            problems.append(f"{page_name}: the row of {folder_name or 'handler/ core'} lacks {sorted(missing)}")
        if unknown := named - everywhere:
            problems.append(
                f"{page_name}: the row of {folder_name or 'handler/ core'} names {sorted(unknown)}, no module"
            )
    return problems


def test_every_layer_table_names_the_modules_of_its_folder() -> None:
    problems = [problem for page in PAGES for problem in layer_problems(_name(page), _page_text(page))]
    assert not problems, "\n".join(problems)
    rows = sum(len(_LAYER_ROW.findall(_page_text(page))) for page in PAGES)
    assert rows >= 12, f"expected the layer tables of README.md and docs/architecture.md, found {rows} rows"


def test_a_planted_module_is_caught() -> None:
    row = "| `handler/text/` | `segmentation`, `spans` | text |\n"
    assert "lacks" in layer_problems("x.md", row)[0]
    assert "no module" in " ".join(layer_problems("x.md", "| core | `service`, `no_such_module` | x |\n"))


def _all_problems() -> Iterator[str]:  # for a quick look: python -m tests.ship.test_docs_match_code
    known = translate_variables_in_code()
    for page in PAGES:
        text = _page_text(page)
        yield from route_problems(_name(page), text, real_routes())
        yield from variable_problems(_name(page), text, known)
        yield from suffix_problems(_name(page), text)
        yield from path_problems(_name(page), text)
        yield from example_body_problems(_name(page), text)
        yield from layer_problems(_name(page), text)
    yield from option_problems(_page_text(API_PAGE))


if __name__ == "__main__":
    for problem in _all_problems():
        print(problem)


CONFIGURATION_PAGE = REPO_ROOT / "docs" / "configuration.md"


def _documented_default(cell: str) -> str:
    """A default cell as the runtime would spell it: its first code span, or "" for "empty"."""
    spans = re.findall(r"`([^`]*)`", cell)
    return spans[0] if spans else ("" if cell.startswith("empty") else cell)


def _runtime_default(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple | type(None)):
        return ",".join(value or ())
    if isinstance(value, Path):
        return str(value.relative_to(REPO_ROOT) if value.is_absolute() else value)
    return str(value)


def default_problems(page: str) -> list[str]:
    """Each runtime variable's default on docs/configuration.md is ``RuntimeConfig``'s."""
    defaults = RuntimeConfig()
    problems = []
    for variable, default, _ in table(page, "variable", "default", "effect", nth=0):  # the runtime's settings
        name = _code(variable)
        field = runtime_config._FIELD_BY_ENV.get(name)
        if field is None:
            continue
        expected = _runtime_default(getattr(defaults, field))
        if _documented_default(default) != expected:
            problems.append(f"docs/configuration.md: {name} defaults to {expected!r}, not {default!r}")
    return problems


def test_every_runtime_default_on_the_configuration_page_is_the_runtimes() -> None:
    problems = default_problems(_page_text(CONFIGURATION_PAGE))
    assert not problems, "\n".join(problems)


def test_a_planted_default_is_caught() -> None:
    page = _page_text(CONFIGURATION_PAGE).replace(
        "| `TRANSLATE_MAX_TEXTS` | `64` |", "| `TRANSLATE_MAX_TEXTS` | `100` |"
    )
    assert default_problems(page) == ["docs/configuration.md: TRANSLATE_MAX_TEXTS defaults to '64', not '`100`'"]


def command_line_options() -> set[str]:
    """Every option of ``python -m handler`` and its commands, from its own parser."""
    parser = cli.build_parser()
    options = set(parser._option_string_actions)
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        for command in action.choices.values():
            options |= set(command._option_string_actions)
    return options


def cli_problems(page_name: str, text: str, options: set[str]) -> list[str]:
    """A line that runs ``python -m handler`` uses only its options, and so does every option in backticks under a
    heading that names the command line."""
    problems = []
    in_section = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            in_section = "command line" in line.lower()
        flags = []
        if "-m handler " in line or "-m handler`" in line:
            flags += re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", line.split("-m handler", 1)[1])
        if in_section:
            flags += re.findall(r"`(--?[a-z][a-z-]*)[ =`]", line)
        problems += [f"{page_name}:{number}: python -m handler has no {flag}" for flag in flags if flag not in options]
    return problems


def test_every_command_line_option_a_page_names_exists() -> None:
    options = command_line_options()
    problems = [problem for page in PAGES for problem in cli_problems(_name(page), _page_text(page), options)]
    assert not problems, "\n".join(problems)


def test_a_planted_command_line_option_is_caught() -> None:
    options = command_line_options()
    assert {"--beam-size", "--scores", "--format", "-o", "--port"} <= options
    assert cli_problems("x.md", "`python -m handler translate --beam 2 a.txt`", options)
    assert cli_problems("x.md", "## The command line\n\n`python -m handler translate a.txt`\n(`--beam N`)\n", options)
    assert not cli_problems("x.md", "## Other\n\n(`--beam N`)\n", options)


_STATED_DEFAULT = re.compile(
    r"`(TRANSLATE_[A-Z0-9_]+)`(?: \((?:default )?|, )(?:`([^`]*)`|(\d[\d,.]*)(?: (MB|MiB|s)\b)?)(?=[ ,;)])"
)
_UNITS = {"MB": 1_000_000, "MiB": 1 << 20, "s": 1, None: 1}


def stated_limit_problems(page_name: str, text: str) -> list[str]:
    """A default or limit a page states beside a variable (`` `TRANSLATE_MAX_CHARS` (20,000) ``, `` `X` (default
    `_state/`) ``, `` `TRANSLATE_MEMORY_BYTES`, 16 MiB ``) is the runtime's default."""
    defaults = RuntimeConfig()
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        for name, code, amount, unit in _STATED_DEFAULT.findall(line):
            field = runtime_config._FIELD_BY_ENV.get(name)
            if field is None or re.fullmatch(r"[A-Z][A-Z0-9_]+", code):
                continue  # not a variable of the runtime, or a list of variables
            actual = getattr(defaults, field)
            stated: object = code if code or not amount else float(amount.replace(",", "")) * _UNITS[unit or None]
            if isinstance(stated, float) and isinstance(actual, int | float):
                matches = abs(stated - actual) <= 0.5 * _UNITS[unit or None] * (10 ** -(len(amount.partition(".")[2])))
            else:
                matches = stated == _runtime_default(actual)
            if not matches:
                problems.append(
                    f"{page_name}:{number}: {name} is {_runtime_default(actual)!r} by default, not {amount or code!r}"
                )
    return problems


def test_every_default_a_page_states_beside_a_variable_is_the_runtimes() -> None:
    problems = [problem for page in PAGES for problem in stated_limit_problems(_name(page), _page_text(page))]
    assert not problems, "\n".join(problems)


def test_a_planted_limit_is_caught() -> None:
    assert stated_limit_problems("x.md", "`TRANSLATE_MAX_CHARS` (10,000 per request)")
    assert stated_limit_problems("x.md", "`TRANSLATE_MAX_FILE_BYTES` (3 MB)")
    assert stated_limit_problems("x.md", "`TRANSLATE_STATE_PREFIX` (default `_docs/`)")
    assert stated_limit_problems("x.md", "(`TRANSLATE_MEMORY_BYTES`, 32 MiB)")
    assert not stated_limit_problems("x.md", "`TRANSLATE_MAX_CHARS` (20,000), `TRANSLATE_MEMORY_BYTES`, 16 MiB)")


# ---- what the pages say of the Function URL's streaming -----------------------------------------------------


def function_url_streaming_claims(page: str) -> list[str]:
    """Each paragraph (or table row) that says a stream works behind Lambda's Function URL without naming the
    invoke mode it needs."""
    return [
        part
        for part in re.split(r"\n\s*\n|\n(?=\|)", page)
        if "Function URL" in part
        and re.search(r"stream", part, re.I)
        and "RESPONSE_STREAM" not in part
        and not part.startswith("#")
    ]


def test_a_page_that_streams_through_the_function_url_names_the_mode_it_needs() -> None:
    """The template answers whole by default (BUFFERED); a page saying the Function URL streams must say how."""
    template = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CloudFormationLoader)
    assert template["Parameters"]["FunctionUrlInvokeMode"]["Default"] == "BUFFERED"
    for page in sorted((REPO_ROOT / "docs").glob("*.md")) + [REPO_ROOT / "README.md"]:
        claims = [line[:160] for line in function_url_streaming_claims(_page_text(page))]
        assert not claims, f"{page.name}: {claims}"
    planted = "| streams | on every adapter, Lambda's Function URL included (stream: true) |"
    assert function_url_streaming_claims(planted) == [planted]
