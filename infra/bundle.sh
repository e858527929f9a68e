#!/usr/bin/env bash
# Which finished bundle a build or deployment ships, checked once for all of them (make image, make deploy-*):
#
#   infra/bundle.sh path BUNDLE     prints the bundle's folder relative to the repository (model_artifacts/<name>)
#   infra/bundle.sh family BUNDLE   prints its family (marian or csanmt, from its manifest.json)
#   infra/bundle.sh name BUNDLE     prints the name its manifest gives it
#   infra/bundle.sh notice BUNDLE   prints a one-line notice when its licence forbids commercial use (the default
#                                   demo model's does), how to build a production model; nothing otherwise
#
# A bundle is a folder under model_artifacts/ with a manifest.json (what `make model` writes): that is the only
# folder the image build context lets in (.dockerignore) and the one the deploy scripts stage from. An empty
# BUNDLE means the shipped default, model_artifacts/default. Exit status 2 with the reason when it is not one.
# Sourced (`source infra/bundle.sh`), it defines bundle_path, bundle_family, bundle_name and bundle_notice instead.

BUNDLE_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

bundle_fail() { echo "bundle: $*" >&2; return 2; }

bundle_path() {  # BUNDLE -> model_artifacts/<name>, or the reason it is not a bundle
    local given="${1:-model_artifacts/default}" absolute relative
    local where="$given"
    [[ "$given" == /* ]] || where="$BUNDLE_REPO_ROOT/$given"  # relative paths start at the repository root
    [[ -e "$where" ]] \
        || { bundle_fail "BUNDLE=$given: no bundle there; build one first: make model MODEL=<checkpoint> NAME=<name>, then BUNDLE=model_artifacts/<name>"; return 2; }
    absolute="$(cd "$where" 2>/dev/null && pwd -P)"
    [[ -n "$absolute" ]] || { bundle_fail "BUNDLE=$given is not a folder"; return 2; }
    relative="${absolute#"$(cd "$BUNDLE_REPO_ROOT" && pwd -P)/"}"
    [[ "$relative" =~ ^model_artifacts/[A-Za-z0-9][A-Za-z0-9._-]*$ ]] \
        || { bundle_fail "BUNDLE=$given is not a folder directly under model_artifacts/ (the only folder the image build and the deploy scripts take a bundle from): copy it to model_artifacts/$(basename "$absolute")"; return 2; }
    [[ -f "$absolute/manifest.json" ]] \
        || { bundle_fail "BUNDLE=$given has no manifest.json, so it is not a finished bundle (make model MODEL=<checkpoint folder or hub id> NAME=<name> writes one)"; return 2; }
    printf '%s\n' "$relative"
}

_bundle_manifest_field() {  # FIELD BUNDLE
    local folder
    folder="$(bundle_path "$2")" || return 2
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1], encoding="utf-8")).get(sys.argv[2]) or sys.argv[3])' \
        "$BUNDLE_REPO_ROOT/$folder/manifest.json" "$1" "${3:-}" \
        || { bundle_fail "$folder/manifest.json is not readable JSON"; return 2; }
}

bundle_family() { _bundle_manifest_field family "${1:-}" marian; }  # manifests before CSANMT had no family: Marian
bundle_name() { _bundle_manifest_field name "${1:-}" ""; }

bundle_notice() {  # BUNDLE -> one line when its licence (manifest or MODEL_CARD.md) forbids commercial use, else ""
    local folder
    folder="$(bundle_path "$1")" || return 2
    (cd "$BUNDLE_REPO_ROOT" && python3 -m handler.model.licence "$folder") \
        || { bundle_fail "could not read the licence of $folder (python3 -m handler.model.licence $folder)"; return 2; }
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -euo pipefail
    case "${1:-}" in
        path) bundle_path "${2:-}" ;;
        family) bundle_family "${2:-}" ;;
        name) bundle_name "${2:-}" ;;
        notice) bundle_notice "${2:-}" ;;
        *) echo "usage: infra/bundle.sh path|family|name|notice BUNDLE" >&2; exit 2 ;;
    esac
fi
