"""What a user pays per million characters: this runtime on AWS Lambda and Cloud Run vs the hosted APIs.

The prices are list prices as the author knew them (published prices up to 2024; written down on
``PRICES_TAKEN``, without a browser): check each source page before relying on them. Serverless compute is
priced from the measured characters/s of the service on 2 threads (2 vCPUs):

* **AWS Lambda, 2048 MB**: Lambda allots CPU in proportion to memory, 1 vCPU per 1,769 MB (AWS Lambda
  documentation, "Memory and computing power"), so a 2048 MB function has ``2048 / 1769`` = 1.16 vCPU (an
  assumption: AWS states the proportion, not a speed). The measured 2-thread speed is scaled by ``1.16 / 2``:
  linear in CPU, which is pessimistic here (two threads are less than twice as fast as one), so the cost is an
  upper estimate. Billed: GB-seconds of the function's memory while it runs (2 GB x seconds), plus requests.
* **Cloud Run, 1 vCPU / 2 GiB, request-based billing** (what ``infra/gcp/deploy.sh`` deploys: ``--cpu 1``,
  ``--memory 2Gi``; a test keeps the two equal): the measured 2-thread speed scaled by ``1 / 2``, linearly in CPU
  (pessimistic, as for Lambda); billed vCPU-seconds and GiB-seconds while a request is handled, plus requests.

Neither includes the free tiers (both have monthly free GB-seconds / vCPU-seconds), cold starts, idle
instances or data transfer; requests are counted at the workload's request size.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

PRICES_TAKEN = "2026-12-01 (prices as known from the providers' pages up to 2024; not re-checked)"
LAMBDA_MB = 2048
LAMBDA_MB_PER_VCPU = 1769
MEASURED_VCPUS = 2  # the benchmark's 2 threads on 2 cores
CLOUD_RUN_VCPUS = 1  # infra/gcp/deploy.sh's CPU (--cpu) and MEMORY (--memory 2Gi)
CLOUD_RUN_GIB = 2.0


@dataclass(frozen=True)
class Price:
    what: str
    usd: float
    unit: str
    source: str  # the page's name


LAMBDA_X86_GB_S = Price("AWS Lambda x86, duration", 0.0000166667, "GB-second", "AWS Lambda pricing (us-east-1)")
LAMBDA_ARM_GB_S = Price("AWS Lambda arm64, duration", 0.0000133334, "GB-second", "AWS Lambda pricing (us-east-1)")
LAMBDA_REQUEST = Price("AWS Lambda, requests", 0.20 / 1e6, "request", "AWS Lambda pricing")
CLOUD_RUN_VCPU_S = Price("Cloud Run, CPU (request-based)", 0.000024, "vCPU-second", "Cloud Run pricing (tier 1)")
CLOUD_RUN_GIB_S = Price("Cloud Run, memory (request-based)", 0.0000025, "GiB-second", "Cloud Run pricing (tier 1)")
CLOUD_RUN_REQUEST = Price("Cloud Run, requests", 0.40 / 1e6, "request", "Cloud Run pricing")
HOSTED_APIS = (
    Price("Amazon Translate (standard, real-time)", 15.0, "million characters", "Amazon Translate pricing"),
    Price("Google Cloud Translation (NMT, Basic/Advanced)", 20.0, "million characters", "Cloud Translation pricing"),
    Price("DeepL API Pro (plus a fixed USD 5.49 a month)", 25.0, "million characters", "DeepL API plans (US prices)"),
)


def lambda_vcpus(memory_mb: int = LAMBDA_MB) -> float:
    return memory_mb / LAMBDA_MB_PER_VCPU


@dataclass(frozen=True)
class Cost:
    where: str
    chars_per_s: float  # at that platform's CPU
    usd_per_million_chars: float
    how: str


def serverless_costs(measured_chars_per_s: float, chars_per_request: float) -> list[Cost]:
    """Cost per million characters on Lambda (x86, arm64) and Cloud Run from the measured 2-thread speed."""
    if not measured_chars_per_s > 0:
        raise ValueError(f"the measured speed must be positive; got {measured_chars_per_s}")
    requests = 1e6 / chars_per_request
    share = lambda_vcpus() / MEASURED_VCPUS
    lambda_speed = measured_chars_per_s * share
    lambda_seconds = 1e6 / lambda_speed
    gigabytes = LAMBDA_MB / 1024
    costs = []
    for price in (LAMBDA_X86_GB_S, LAMBDA_ARM_GB_S):
        usd = lambda_seconds * gigabytes * price.usd + requests * LAMBDA_REQUEST.usd
        how = (
            f"{lambda_seconds:,.0f} s x {gigabytes:g} GB x ${price.usd:.10f} + {requests:,.0f} requests x $0.20/M; "
            f"speed = measured x {lambda_vcpus():.3f} / {MEASURED_VCPUS} vCPU"
        )
        architecture = "x86" if price is LAMBDA_X86_GB_S else "arm64"
        costs.append(Cost(f"AWS Lambda {LAMBDA_MB} MB {architecture}", lambda_speed, usd, how))
    run_speed = measured_chars_per_s * CLOUD_RUN_VCPUS / MEASURED_VCPUS
    run_seconds = 1e6 / run_speed
    per_second = CLOUD_RUN_VCPUS * CLOUD_RUN_VCPU_S.usd + CLOUD_RUN_GIB * CLOUD_RUN_GIB_S.usd
    usd = run_seconds * per_second + requests * CLOUD_RUN_REQUEST.usd
    how = (
        f"{run_seconds:,.0f} s x ({CLOUD_RUN_VCPUS} x ${CLOUD_RUN_VCPU_S.usd} + {CLOUD_RUN_GIB:g} x "
        f"${CLOUD_RUN_GIB_S.usd}) + {requests:,.0f} requests x $0.40/M; "
        f"speed = measured x {CLOUD_RUN_VCPUS} / {MEASURED_VCPUS} vCPU"
    )
    costs.append(Cost(f"Cloud Run {CLOUD_RUN_VCPUS} vCPU / {CLOUD_RUN_GIB:g} GiB", run_speed, usd, how))
    return costs


def price_lines() -> list[str]:
    """Every price used, with its source page, as a Markdown list."""
    lines = []
    for price in (
        LAMBDA_X86_GB_S,
        LAMBDA_ARM_GB_S,
        LAMBDA_REQUEST,
        CLOUD_RUN_VCPU_S,
        CLOUD_RUN_GIB_S,
        CLOUD_RUN_REQUEST,
        *HOSTED_APIS,
    ):
        amount = (
            f"${price.usd * 1e6:.2f} per million requests"
            if price.unit == "request"
            else f"${price.usd:.10f}".rstrip("0").rstrip(".") + f" per {price.unit}"
        )
        lines.append(f'- {price.what}: {amount}; source: "{price.source}", list price as known on {PRICES_TAKEN}')
    return lines


def _table_lines(workloads: dict[str, dict[str, float]], titles: dict[str, str], request_texts: int) -> list[str]:
    lines = ["| where | " + " | ".join(titles[key] for key in workloads) + " |", "|---|" + "---|" * len(workloads)]
    rows: dict[str, list[str]] = {}
    hows: list[str] = []
    for key, figures in workloads.items():
        per_request = figures["characters"] / max(1, -(-int(figures["sentences"]) // request_texts))
        # priced from the speed as the report prints it (one decimal), so that pricing the report again
        # (``reprice``) gives the same figures
        for entry in serverless_costs(round(figures["chars_per_s"], 1), per_request):
            rows.setdefault(entry.where, []).append(
                f"${entry.usd_per_million_chars:,.2f} ({entry.chars_per_s:,.0f} chars/s)"
            )
            hows.append(f"- {titles[key]}, {entry.where}: {entry.how}")
    for where, cells in rows.items():
        lines.append(f"| {where} | " + " | ".join(cells) + " |")
    for api in HOSTED_APIS:
        lines.append(f"| {api.what} | " + " | ".join(f"${api.usd:,.2f} (list price)" for _ in workloads) + " |")
    return lines + ["", "How each was computed:", "", *hows]


COST_HEADING = "Cost per million source characters"


def section_lines(workloads: dict[str, dict[str, float]], titles: dict[str, str], request_texts: int) -> list[str]:
    """The report's cost part: the table per platform and model, how each cell was computed, the assumptions and
    the prices. ``workloads``: per model key, its measured ``chars_per_s``, ``characters`` and ``sentences`` (sent
    in requests of ``request_texts`` texts); ``titles``: each key's name in the table."""
    return [
        f"{COST_HEADING} (compute only; free tiers, idle instances and data transfer not counted):",
        "",
        *_table_lines(workloads, titles, request_texts),
        "",
        "Assumptions:",
        "",
        f"- A {LAMBDA_MB} MB Lambda function gets {lambda_vcpus():.2f} vCPU (AWS allots 1 vCPU per "
        f'{LAMBDA_MB_PER_VCPU:,} MB, AWS Lambda documentation, "Memory and computing power"); the '
        f"measured 2-thread speed is scaled by {lambda_vcpus():.3f} / 2, linearly in CPU: pessimistic, as "
        "two threads are less than twice one, so the Lambda figures are upper estimates.",
        f"- Cloud Run: {CLOUD_RUN_VCPUS} vCPU and {CLOUD_RUN_GIB:g} GiB per instance (`infra/gcp/deploy.sh`'s "
        f"`--cpu` and `--memory`), request-based billing, one request at a time; the measured 2-thread speed scaled "
        f"by {CLOUD_RUN_VCPUS} / {MEASURED_VCPUS}, linearly in CPU, as for Lambda.",
        "",
        "Prices:",
        "",
        *price_lines(),
    ]


_WORKLOAD_ROW = re.compile(
    r"^\| (?P<title>[^|]+?) \| (?P<sentences>[\d,]+) \| (?P<characters>[\d,]+) \| [\d.,]+ \| (?P<speed>[\d.,]+) \| "
)


def reprice(report: str) -> str:
    """``report`` (``docs/benchmarks.md``) with its cost part written again from the characters/s it recorded (as
    printed: one decimal), at today's prices and platform settings; the measured figures stay as they are."""
    lines = report.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(COST_HEADING)), None)
    if start is None:
        raise ValueError(f"the report has no '{COST_HEADING}' part")
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    while end > start and not lines[end - 1].strip():
        end -= 1
    workloads: dict[str, dict[str, float]] = {}
    for line in lines[:start]:
        match = _WORKLOAD_ROW.match(line)
        if match:
            workloads[match["title"]] = {
                "sentences": float(match["sentences"].replace(",", "")),
                "characters": float(match["characters"].replace(",", "")),
                "chars_per_s": float(match["speed"].replace(",", "")),
            }
    sizes = re.findall(r"in requests of (\d+) texts", "\n".join(lines[:start]))
    if not workloads or not sizes:
        raise ValueError("the report's workload table (model | sentences | characters | ...) was not found")
    titles = {title: title for title in workloads}
    note = (
        "(Priced again by `python -m bench.pipeline.cost` from this run's characters/s as printed above; "
        "the measured figures are the run's.)"
    )
    new = section_lines(workloads, titles, int(sizes[-1]))
    if [line for line in lines[start:end] if line not in (note, "")] == [line for line in new if line]:
        return report  # nothing changed: the prices and settings are the ones the report was priced with
    new[2:2] = [note, ""]
    return "\n".join([*lines[:start], *new, *lines[end:]]) + ("\n" if report.endswith("\n") else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.pipeline.cost",
        description="price a benchmark report's measured characters/s again (prices or platform settings changed)",
    )
    parser.add_argument("report", type=Path, nargs="?", default=Path("docs/benchmarks.md"))
    args = parser.parse_args(argv)
    args.report.write_text(reprice(args.report.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"priced {args.report} again")
    return 0


if __name__ == "__main__":
    sys.exit(main())
