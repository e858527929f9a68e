#!/usr/bin/env bash
# Builds the function's container images with whichever engine this machine has (make image / make image-gcp).
#
#   infra/container/image.sh build lambda|cloudrun    build the Dockerfile's target
#   infra/container/image.sh push IMAGE DESTINATION   push a built image to a registry (docker://... for buildah)
#   infra/container/image.sh engine                   print the engine that would be used
#
# Settings (environment variables; the Makefile passes its variables of the same names):
#   CONTAINER   docker, podman or buildah (default: the first that works here: docker with a running daemon,
#               then buildah, then podman)
#   BUNDLE      a finished bundle to bake, model_artifacts/<name> (what `make model` writes); default: the shipped
#               model_artifacts/default. No torch and no network are needed for it.
#   MODEL       instead of BUNDLE: a checkpoint (Hugging Face hub id, or a folder under model_artifacts/) that the
#               image build exports, quantizes and verifies itself (needs network: torch from the PyTorch CPU
#               index, the hub)
#   BASE_IMAGE  the Python base image (default python:3.11-slim)
#   IMAGE       image name (default zh-en-translate); the tag is the target (lambda or cloudrun)
#   ISOLATION   buildah/podman isolation (default chroot: works without the privileges a container runtime needs)
#   PRINT=1     print the build command instead of running it
# A bundle whose licence forbids commercial use (the shipped default demo: CC BY-NC-SA 4.0) is named so on stderr
# (python3 -m handler.model.licence), with how to build a production model. When the engine cannot pull the base
# image, its message is followed by what to do: BASE_IMAGE=, or a local stand-in (tests/journey/stand_in_base.sh).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../bundle.sh
source "$REPO_ROOT/infra/bundle.sh"
die() { echo "image.sh: $*" >&2; exit 2; }

engine() {  # the container engine to use, or the reason there is none
    if [[ -n "${CONTAINER:-}" ]]; then
        case "$CONTAINER" in docker|podman|buildah) ;; *) die "CONTAINER=$CONTAINER: use docker, podman or buildah" ;; esac
        command -v "$CONTAINER" >/dev/null || die "CONTAINER=$CONTAINER, but $CONTAINER is not installed"
        [[ "$CONTAINER" != docker ]] || docker info >/dev/null 2>&1 \
            || die "CONTAINER=docker, but the Docker daemon does not answer ('docker info' fails): start it, or use CONTAINER=buildah or podman"
        echo "$CONTAINER"
        return
    fi
    if command -v docker >/dev/null && docker info >/dev/null 2>&1; then echo docker; return; fi
    if command -v buildah >/dev/null; then echo buildah; return; fi
    if command -v podman >/dev/null; then echo podman; return; fi
    if command -v docker >/dev/null; then
        die "docker is installed but its daemon does not answer ('docker info' fails), and neither buildah nor podman is installed: start the Docker daemon, or install buildah (Debian/Ubuntu: apt-get install buildah), or choose one with CONTAINER=docker|podman|buildah"
    fi
    die "no container engine found: install Docker (with its daemon running), buildah or podman (Debian/Ubuntu: apt-get install buildah), or choose one with CONTAINER=docker|podman|buildah"
}

build() {
    local target="$1" tool command=() started
    case "$target" in lambda|cloudrun) ;; *) die "unknown target '$target'; use lambda (AWS Lambda) or cloudrun (Cloud Run / Cloud Functions)" ;; esac
    # what to bake is checked first: a wrong BUNDLE or MODEL is the user's first thing to fix, engine or not
    local model_args=()
    if [[ -n "${MODEL:-}" && -n "${BUNDLE:-}" ]]; then
        die "give either BUNDLE (a finished bundle to bake) or MODEL (a checkpoint the image build exports), not both"
    fi
    if [[ -n "${BUNDLE:-}" ]]; then
        model_args=(--build-arg "BUNDLE=$(bundle_path "$BUNDLE")") || exit 2
    elif [[ -n "${MODEL:-}" ]]; then
        model_args=(--build-arg "MODEL=$(model_argument "$MODEL")") || exit 2
    fi
    tool="$(engine)"
    local image="${IMAGE:-zh-en-translate}:$target"
    case "$tool" in
        docker) command=(docker build) ;;
        podman) command=(podman build --isolation "${ISOLATION:-chroot}") ;;
        buildah) command=(buildah build --isolation "${ISOLATION:-chroot}" --layers) ;;  # --layers: cache as docker does
    esac
    command+=(--target "$target" --tag "$image")
    [[ -z "${BASE_IMAGE:-}" ]] || command+=(--build-arg "PYTHON_IMAGE=$BASE_IMAGE")
    command+=("${model_args[@]}")
    command+=("$REPO_ROOT")
    # the default demo bundle (or any non-commercial one) says so: the image is not for commercial use
    local notice=""
    [[ -n "${MODEL:-}" ]] || notice="$(bundle_notice "${BUNDLE:-}")" || exit 2
    [[ -z "$notice" ]] || echo "image.sh: $notice" >&2
    if [[ "${PRINT:-0}" == 1 ]]; then printf '%q ' "${command[@]}"; echo; return; fi
    started=$SECONDS
    local log status=0
    log="$(mktemp)"
    "${command[@]}" 2>&1 | tee "$log" || status=$?
    if (( status != 0 )); then
        if grep -qiE "$BASE_PULL_FAILED" "$log"; then explain_base_image "$tool" "$target"; fi
        rm -f "$log"
        exit "$status"
    fi
    rm -f "$log"
    echo "built $image with $tool in $((SECONDS - started)) s"
}

# what each engine says when it cannot pull an image a FROM names (the runtime stages' base): buildah and podman
# "creating build container: ... initializing source docker://...: pinging container registry ..." or "short-name
# ... did not resolve"; docker with BuildKit "failed to resolve source metadata for docker.io/library/...", the
# classic builder "pull access denied" / "Error response from daemon: Get ...registry..."
BASE_PULL_FAILED='creating build container|initializing source docker://|short-name .* did not resolve|failed to resolve source metadata|pull access denied|error pulling image|failed to pull|manifest unknown|Error response from daemon: .*(registry|Get "https://)'

explain_base_image() {  # ENGINE TARGET: after the engine's own message, what to do when the base cannot be pulled
    local base="${BASE_IMAGE:-python:3.11-slim}" make_target=image
    [[ "$2" != cloudrun ]] || make_target=image-gcp
    cat >&2 <<EOF
image.sh: $1 could not pull the base image $base (its message is above). Name a base image this machine has
or can reach: make $make_target BASE_IMAGE=<image> (python:3.11-slim from a registry mirror, or one already in
$1's store: $1 images). With no registry at all, make a local stand-in from Debian's packages (needs root,
debootstrap and podman: apt-get install debootstrap podman; docs/deployment.md, "The images"):
    bash tests/journey/stand_in_base.sh            # makes localhost/stand-in-python:3.11-slim
    make $make_target BASE_IMAGE=localhost/stand-in-python:3.11-slim
EOF
}

model_argument() {  # a hub id as it is; a local folder must be under model_artifacts/, the folder the build sees
    local model="$1" absolute relative
    if [[ -e "$model" || -e "$REPO_ROOT/$model" ]]; then
        if [[ -e "$model" ]]; then absolute="$(cd "$model" && pwd -P)"; else absolute="$(cd "$REPO_ROOT/$model" && pwd -P)"; fi
        relative="${absolute#"$(cd "$REPO_ROOT" && pwd -P)/"}"
        if [[ ! "$relative" =~ ^model_artifacts/[^/]+$ ]]; then
            die "MODEL=$model is a folder outside model_artifacts/, and the image build sees only model_artifacts/ (.dockerignore): move it to model_artifacts/$(basename "$absolute"), or export it here and bake the bundle: make model MODEL=$model NAME=<name>, then make image BUNDLE=model_artifacts/<name>"
        fi
        [[ ! -f "$absolute/manifest.json" ]] \
            || die "MODEL=$model is a finished bundle, not a checkpoint: bake it with BUNDLE=$relative"
        printf '%s\n' "$relative"
    else
        printf '%s\n' "$model"
    fi
}

push() {
    [[ $# -eq 2 ]] || die "usage: image.sh push IMAGE DESTINATION (e.g. REGION-docker.pkg.dev/PROJECT/REPO/NAME:TAG)"
    local tool
    tool="$(engine)"
    case "$tool" in
        docker) docker tag "$1" "$2" && docker push "$2" ;;
        podman) podman push "$1" "docker://${2#docker://}" ;;
        buildah) buildah push "$1" "docker://${2#docker://}" ;;
    esac
}

case "${1:-}" in
    build) [[ $# -eq 2 ]] || die "usage: image.sh build lambda|cloudrun"; build "$2" ;;
    push) shift; push "$@" ;;
    engine) engine ;;
    *) die "usage: image.sh build lambda|cloudrun | push IMAGE DESTINATION | engine" ;;
esac
