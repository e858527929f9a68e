#!/usr/bin/env bash
# One list of shell commands that a deploy script both prints (`print`) and runs (`deploy`), so that what a user
# reads, or copies into a shell, is what `make deploy-* DEPLOY=1` runs: the deploy scripts add each command with
# `command_add`, and `commands_print` / `commands_run` print or run the same text. Sourced by infra/aws/deploy.sh
# and infra/gcp/deploy.sh (`source infra/commands.sh`); defines:
#
#   command_add WORD...   one command; each word quoted for the shell (a word holding `$` in double quotes, so a
#                         variable or `$(...)` set by an earlier line expands when the line runs)
#   command_raw LINE      a line as it is (an assignment, `a || b`)
#   command_note TEXT     a `# TEXT` comment line
#   commands_print        print the list
#   commands_run DIR VAR...  run the list with bash from DIR (-e: the first failing command stops it; -v: each
#                         line is echoed to stderr as it runs) without the variables VAR... (the deploy script's
#                         settings) and outside any make that called the script (MAKEFLAGS), so that the commands
#                         see only what is written in them, as in a user's shell

COMMANDS=""

command_quote() {  # WORD -> the word as the shell reads it back: bare when safe, "..." around $, '...' otherwise
    local word="$1"
    if [[ "$word" =~ ^[A-Za-z0-9_./:=@,+%-]+$ ]]; then printf '%s' "$word"
    elif [[ "$word" =~ ^([A-Z][A-Z0-9_]*=)(.*)$ ]]; then  # VAR=value before a command stays an assignment
        printf '%s' "${BASH_REMATCH[1]}"; command_quote "${BASH_REMATCH[2]}"
    elif [[ "$word" == *'$'* ]]; then printf '"%s"' "$word"
    else printf "'%s'" "${word//\'/\'\\\'\'}"
    fi
}

command_add() {
    local word line=""
    for word in "$@"; do line+="$(command_quote "$word") "; done
    COMMANDS+="${line% }"$'\n'
}

command_raw() { COMMANDS+="$1"$'\n'; }

command_note() { COMMANDS+="# $*"$'\n'; }

commands_print() { printf '%s' "$COMMANDS"; }

commands_run() {
    local script status directory="$1" variable unset=()
    shift
    for variable in MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES "$@"; do unset+=(-u "$variable"); done
    script="$(mktemp)"
    printf '%s' "$COMMANDS" > "$script"
    status=0
    (cd "$directory" && env "${unset[@]}" bash -v -euo pipefail "$script") || status=$?
    rm -f "$script"
    return "$status"
}
