"""Recording stand-ins for the cloud command-line tools, and the two ways of running a deploy target through them.

``sam``, ``gcloud``, ``gsutil`` and the container engines (``docker``, ``buildah``) are replaced by small scripts on
PATH that append their argument vector to a log file (one line per call, each word as bash's ``printf %q`` writes it)
and answer the few questions the deploy commands ask (a service agent, a project number, a trigger's subscription,
a new notification channel's name; "does it exist?" is answered "no", and a list of Cloud Monitoring's policies or
channels is empty, as in a new project, unless ``STAND_IN_LISTED`` names what it holds). ``gcloud`` also refuses,
with exit status 3, an ``--env-vars-file``, ``--source``, ``--policy-from-file`` or ``--config-from-file`` that does not
exist when it is called: a printed command may only read what an earlier printed command wrote.

``printed``: ``make <target> VAR=...`` prints the commands; they are then run by bash, as a user pasting them would
(with ``-euo pipefail``, so that a failing line fails the run). ``deployed``: ``make <target> DEPLOY=1 VAR=...``.
Both from the repository root, with the same stand-ins, the same variables and the system ``python3`` (no numpy).
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.ship.dockerfile_model import REPO_ROOT

RECORD = "DEPLOY_RECORD"
PROJECT_NUMBER = "123456789"
SERVICE_AGENT = f"service-{PROJECT_NUMBER}@gs-project-accounts.iam.gserviceaccount.com"
CHANNEL = f"projects/{PROJECT_NUMBER}/notificationChannels/42"  # the name a new notification channel gets
# what `gcloud monitoring ... list` answers: nothing (a new project), or this variable's value when it is set
STAND_IN_LISTED = "STAND_IN_LISTED"

_RECORD_CALL = f"""#!/bin/bash
{{ printf '%q' "$(basename "$0")"; printf ' %q' "$@"; printf '\\n'; }} >> "${RECORD}"
"""

_GCLOUD = (
    _RECORD_CALL
    + f"""previous=""
for word in "$@"; do
    if [[ "$previous" == --env-vars-file || "$previous" == --source || "$previous" == --policy-from-file \\
        || "$previous" == --config-from-file ]] && [[ ! -e "$word" ]]; then
        echo "gcloud stand-in: $previous $word: no such file (no earlier command wrote it)" >&2
        exit 3
    fi
    previous="$word"
done
case " $* " in
    *" storage service-agent "*) echo "{SERVICE_AGENT}" ;;
    *" projects describe "*" --format "*) echo "{PROJECT_NUMBER}" ;;
    *" functions describe "*" --format "*) echo "projects/p/locations/r/triggers/$3-trigger" ;;
    *" eventarc triggers describe "*" --format "*) echo "projects/p/subscriptions/eventarc-${{4##*/}}-sub" ;;
    *" monitoring channels create "*" --format "*) echo "{CHANNEL}" ;;
    *" monitoring "*" list "*) [[ -z "${{{STAND_IN_LISTED}:-}}" ]] || echo "${STAND_IN_LISTED}" ;;
    *" describe "*) exit 1 ;;
esac
exit 0
"""
)

STAND_INS = {
    "sam": _RECORD_CALL,
    "gcloud": _GCLOUD,
    "gsutil": _RECORD_CALL,
    "docker": _RECORD_CALL,  # `docker info` answers: a daemon runs
    "buildah": _RECORD_CALL,
}


def stand_in_bin(folder: Path) -> Path:
    """A folder with every stand-in, to put first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, script in STAND_INS.items():
        (folder / name).write_text(script, encoding="utf-8")
        (folder / name).chmod(0o755)
    return folder


@dataclass(frozen=True)
class Recorded:
    """What one way of deploying did: the tools' calls in order, and the files under the folder it wrote in."""

    calls: list[list[str]]
    files: dict[str, bytes]
    output: str

    def of(self, tool: str) -> list[list[str]]:
        return [call for call in self.calls if call[0] == tool]


class DeployBench:
    """Runs deploy targets through the stand-ins; ``written`` is the folder whose files are compared (STAGE_DIR)."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.bin = stand_in_bin(work / "bin")
        self.home = work / "home"
        self.home.mkdir(exist_ok=True)
        self.temp = work / "tmp"  # mktemp's folder: a STAGE_DIR that is not given is made here
        self.temp.mkdir(exist_ok=True)
        self.log = work / "calls.log"

    def environ(self) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(self.home),
            "TMPDIR": str(self.temp),
            "LANG": "C.UTF-8",
            RECORD: str(self.log),
        }

    def _fresh(self, written: Path | None) -> None:
        self.log.write_text("", encoding="utf-8")
        for folder in (self.temp, *((written,) if written else ())):
            if folder.exists():
                subprocess.run(["rm", "-rf", str(folder)], check=True)
        self.temp.mkdir()

    def _make(self, target: str, *variables: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["make", "--no-print-directory", "-C", str(REPO_ROOT), target, *variables],
            capture_output=True,
            text=True,
            env=self.environ(),
            timeout=300,
        )

    def _recorded(self, written: Path | None, output: str) -> Recorded:
        folder = written or self.temp
        # folders mktemp made (a STAGE_DIR not given) have random names: each is named by its order instead
        made = (
            {}
            if written
            else {f"{self.temp}/{path.name}": f"<mktemp-{i}>" for i, path in enumerate(sorted(self.temp.iterdir()))}
        )

        def named(text: str) -> str:
            for random_name, name in made.items():
                text = text.replace(random_name, name)
            return text

        calls = [[named(word) for word in shlex.split(line)] for line in self.log.read_text().splitlines()]
        files = {
            named(str(path)).removeprefix(f"{folder}/"): path.read_bytes()
            for path in sorted(folder.rglob("*"))
            if path.is_file()
        }
        return Recorded(calls, files, output)

    def printout(self, target: str, *variables: str) -> str:
        result = self._make(target, *variables)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def printed(self, target: str, *variables: str, written: Path | None = None) -> Recorded:
        """Print the commands, check that printing called nothing, then run them as printed."""
        self._fresh(written)
        printout = self.printout(target, *variables)
        assert self.log.read_text(encoding="utf-8") == "", "printing the commands ran some of them"
        script = self.work / f"{target}.printed.sh"
        script.write_text(printout, encoding="utf-8")
        result = subprocess.run(
            ["bash", "-euo", "pipefail", str(script)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            env=self.environ(),
            timeout=300,
        )
        assert result.returncode == 0, f"the printed commands failed:\n{result.stderr}"
        return self._recorded(written, printout)

    def deployed(self, target: str, *variables: str, written: Path | None = None) -> Recorded:
        self._fresh(written)
        result = self._make(target, "DEPLOY=1", *variables)
        assert result.returncode == 0, f"make {target} DEPLOY=1 failed:\n{result.stderr}"
        return self._recorded(written, result.stdout + result.stderr)
