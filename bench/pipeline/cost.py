"""What a user pays per million characters: this runtime on AWS Lambda and Cloud Run vs the hosted APIs.

The prices are list prices as the author knew them (published prices up to 2024; written down on
``PRICES_TAKEN``, without a browser): check each source page before relying on them. Serverless compute is
priced from the measured characters/s of the service on 2 threads (2 vCPUs):

* **AWS Lambda, 2048 MB**: Lambda allots CPU in proportion to memory, 1 vCPU per 1,769 MB (AWS Lambda
  documentation, "Memory and computing power"), so a 2048 MB function has ``2048 / 1769`` = 1.16 vCPU (an
  assumption: AWS states the proportion, not a speed). The measured 2-thread speed is scaled by ``1.16 / 2``:
  linear in CPU, which is pessimistic here (two threads are less than twice as fast as one), so the cost is an
  upper estimate. Billed: GB-seconds of the function's memory while it runs (2 GB x seconds), plus requests.
* **Cloud Run, 2 vCPU / 2 GiB, request-based billing**: the measured 2-thread speed as is; billed vCPU-seconds
  and GiB-seconds while a request is handled, plus requests.

Neither includes the free tiers (both have monthly free GB-seconds / vCPU-seconds), cold starts, idle
instances or data transfer; requests are counted at the workload's request size.
"""

from __future__ import annotations

from dataclasses import dataclass

PRICES_TAKEN = "2026-12-01 (prices as known from the providers' pages up to 2024; not re-checked)"
LAMBDA_MB = 2048
LAMBDA_MB_PER_VCPU = 1769
MEASURED_VCPUS = 2  # the benchmark's 2 threads on 2 cores
CLOUD_RUN_VCPUS = 2
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
    run_seconds = 1e6 / measured_chars_per_s
    per_second = CLOUD_RUN_VCPUS * CLOUD_RUN_VCPU_S.usd + CLOUD_RUN_GIB * CLOUD_RUN_GIB_S.usd
    usd = run_seconds * per_second + requests * CLOUD_RUN_REQUEST.usd
    how = (
        f"{run_seconds:,.0f} s x ({CLOUD_RUN_VCPUS} x ${CLOUD_RUN_VCPU_S.usd} + {CLOUD_RUN_GIB:g} x "
        f"${CLOUD_RUN_GIB_S.usd}) + {requests:,.0f} requests x $0.40/M; speed = measured"
    )
    costs.append(Cost(f"Cloud Run {CLOUD_RUN_VCPUS} vCPU / {CLOUD_RUN_GIB:g} GiB", measured_chars_per_s, usd, how))
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
