#!/usr/bin/env bash
# Deploys the translation function to AWS Lambda with the SAM CLI (infra/aws/template.yaml), baking BUNDLE.
#
# Usage:   infra/aws/deploy.sh print     print the commands (what `make deploy-aws` does)
#          infra/aws/deploy.sh deploy    run them (`make deploy-aws DEPLOY=1`)
# Settings (environment variables):
#   BUNDLE         the bundle the image bakes: model_artifacts/<name> (what `make model` writes; default: the
#                  shipped model_artifacts/default). `sam build` passes it to the Dockerfile as the build argument
#                  BUNDLE through the template's Bundle parameter; `sam deploy` records it in the stack.
#   STACK          CloudFormation stack name (default: zh-en-translate)
#   INPUT_BUCKET   new bucket whose uploads are translated (required by `deploy`)
#   OUTPUT_BUCKET  new bucket that receives the translations; must differ from INPUT_BUCKET
#   ALERT_EMAIL    an e-mail address for the alarms' notifications (the template's AlarmEmail; default: none, the
#                  alarms notify no one): docs/operations.md
# Needs the AWS SAM CLI and Docker (sam build builds the image), with credentials that may create the stack.
# `print` prints exactly the commands `deploy` runs (one list, infra/commands.sh), the default demo bundle's
# licence notice among its comments.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../bundle.sh
source "$REPO_ROOT/infra/bundle.sh"
# shellcheck source=../commands.sh
source "$REPO_ROOT/infra/commands.sh"
MODE="${1:-print}"
die() { echo "deploy.sh: $*" >&2; exit 2; }
[[ "$MODE" == print || "$MODE" == deploy ]] || die "unknown mode '$MODE'; use print or deploy"

SHIPPED="$(bundle_path "${BUNDLE:-}")" || exit 2
FAMILY="$(bundle_family "$SHIPPED")" || exit 2
NOTICE="$(bundle_notice "$SHIPPED")" || exit 2
STACK="${STACK:-zh-en-translate}"
INPUT="${INPUT_BUCKET:-}"
OUTPUT="${OUTPUT_BUCKET:-}"
ALARMS=()  # the alarms' e-mail address, only when one is given (the template's default: none)
[[ -z "${ALERT_EMAIL:-}" || "$ALERT_EMAIL" =~ ^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]+$ ]] \
    || die "ALERT_EMAIL must be one e-mail address (the template's AlarmEmail); got '$ALERT_EMAIL'"
[[ -z "${ALERT_EMAIL:-}" ]] || ALARMS=("AlarmEmail=$ALERT_EMAIL")
if [[ "$MODE" == deploy ]]; then
    [[ -n "$INPUT" && -n "$OUTPUT" ]] || die "set INPUT_BUCKET=... OUTPUT_BUCKET=... (two new bucket names)"
    command -v sam >/dev/null || die "sam not found: install the AWS SAM CLI (and Docker, which sam build uses)"
else
    INPUT="${INPUT:-<INPUT_BUCKET>}"
    OUTPUT="${OUTPUT:-<OUTPUT_BUCKET>}"
fi
[[ "$INPUT" != "$OUTPUT" ]] || die "INPUT_BUCKET and OUTPUT_BUCKET must differ: each translation would trigger another"

# The commands, printed as they are (print) or run (deploy) from the repository root: the template's paths are
# relative to it. Values not given show as <NAME>.
command_note "AWS Lambda (make deploy-aws): needs the AWS SAM CLI and Docker; run these from the repository root."
command_note "needs INPUT_BUCKET and OUTPUT_BUCKET (two new bucket names; [STACK=$STACK] [ALERT_EMAIL=...]); those not given show as <NAME>:"
command_note "  make deploy-aws INPUT_BUCKET=... OUTPUT_BUCKET=... prints them filled in, and DEPLOY=1 runs them"
[[ -z "$NOTICE" ]] || command_note "$NOTICE"
command_note "the image bakes $SHIPPED ($FAMILY bundle $(bundle_name "$SHIPPED"))"
command_add sam build --template-file infra/aws/template.yaml --parameter-overrides "Bundle=$SHIPPED"
command_add sam deploy --template-file .aws-sam/build/template.yaml --stack-name "$STACK" --resolve-image-repos \
    --capabilities CAPABILITY_IAM --parameter-overrides "InputBucketName=$INPUT" "OutputBucketName=$OUTPUT" \
    "${ALARMS[@]}" "Bundle=$SHIPPED"
command_note "first time, to choose every parameter interactively: sam deploy --guided"
command_note "streamed answers from the Function URL: add FunctionUrlInvokeMode=RESPONSE_STREAM to sam deploy's --parameter-overrides"
command_note "API keys with limits (chars=, rate=; docs/operations.md#key-quotas): add KeyQuotas=enabled (a DynamoDB table counts each key's usage) and ApiKeys=... to them"
command_note "alarms (docs/operations.md): failed events waiting, errors, throttles, invocations near the timeout;" \
    "$([[ -n "${ALERT_EMAIL:-}" ]] && echo "mailed to $ALERT_EMAIL once the link in AWS's confirmation mail is followed" || echo "ALERT_EMAIL=... mails them")"
command_note "teardown (both buckets must be empty first; sam delete removes the alarms and their topic with the stack):"
command_note "  aws s3 rm s3://$INPUT --recursive && aws s3 rm s3://$OUTPUT --recursive"
command_note "  sam delete --stack-name $STACK"

if [[ "$MODE" == deploy ]]; then commands_run "$REPO_ROOT" BUNDLE STACK INPUT_BUCKET OUTPUT_BUCKET ALERT_EMAIL; else commands_print; fi
