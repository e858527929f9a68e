"""``python -m handler translate --stream`` and ``--lines``: the command line as a Unix filter, a real process on pipes.

``--lines`` is driven as ``tail -f chat.log | ... --lines`` drives it: a line written, its English read back, only
then the next line; a process that waited for the end of its input would never answer. ``--stream`` runs with
stderr on the same pipe as stdout, so the order in which the English and the progress bar's updates (one after every
decoded batch) arrive shows the first English out while batches were still being decoded; its stdout alone is the
non-streamed command's byte for byte. All on the shipped default model, as a user runs it.
"""

from __future__ import annotations

import gzip
import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from handler.config import DEFAULT_BUNDLE_DIR
from tests.adapters.conftest import REPO_ROOT, function_env, subprocess_env
from tests.fuzz.shipped import NEEDS_SHIPPED_BUNDLE

pytestmark = [pytest.mark.slow, *NEEDS_SHIPPED_BUNDLE]

ANSWER_TIMEOUT_S = 120  # for one line's English: the model loads before the first; a hang is what this catches
# one progress bar update on stderr (handler.adapters.cli.ProgressBar)
BAR = re.compile(r"\r\[[#.]+\] +(\d+)%  [\d,]+ / [\d,]+ characters")


def dev_sentences(count: int, skip: int = 0) -> list[str]:
    """Sentences of the repository's dev set (real text of every length, inside the checkout)."""
    with gzip.open(REPO_ROOT / "data" / "corpus" / "dev.zh-en.tsv.gz", "rt", encoding="utf-8") as pairs:
        sources = [line.split("\t")[0] for line in pairs]
    return sources[skip : skip + count]


def cli_env(tmp_path: Path) -> dict[str, str]:
    return subprocess_env(function_env(DEFAULT_BUNDLE_DIR, TRANSLATE_STATE_DIR=str(tmp_path)))


def translate(args: list[str], env: dict[str, str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "handler", "translate", *args],
        cwd=REPO_ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=600,
    )


def start(args: list[str], env: dict[str, str], stderr: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "handler", "translate", *args],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
    )


def lines_of(stream: object) -> queue.Queue[bytes]:
    """Each line of a process's output as it arrives (b"" at the end), read on a thread."""
    arrived: queue.Queue[bytes] = queue.Queue()

    def read() -> None:
        for line in iter(stream.readline, b""):  # type: ignore[attr-defined]
            arrived.put(line)
        arrived.put(b"")

    threading.Thread(target=read, daemon=True).start()
    return arrived


# --- --lines ------------------------------------------------------------------------------------------------------


def test_lines_answers_each_line_before_the_next_is_written(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    chat = [
        dev_sentences(1)[0],
        "",  # an empty line gives an empty line
        "  " + "".join(dev_sentences(3, skip=1)),  # several sentences, indented
        dev_sentences(1, skip=4)[0],
        dev_sentences(1)[0],  # said again: the translation memory answers it
        "hello world 2024",  # no Chinese
    ]
    whole = translate([], env, ("\n".join(chat) + "\n").encode("utf-8"))  # the same text, not line by line
    assert whole.returncode == 0, whole.stderr.decode()
    expected = whole.stdout.decode("utf-8").split("\n")[: len(chat)]

    process = start(["--lines"], env, stderr=subprocess.PIPE)
    assert process.stdin is not None
    answers = lines_of(process.stdout)
    try:
        for line, english in zip(chat, expected, strict=True):
            process.stdin.write(line.encode("utf-8") + b"\n")
            process.stdin.flush()  # the line is on the pipe, input not closed: the answer must come now
            try:
                answer = answers.get(timeout=ANSWER_TIMEOUT_S)
            except queue.Empty:
                pytest.fail(f"no English for {line!r} within {ANSWER_TIMEOUT_S} s while the input stayed open")
            assert answer == english.encode("utf-8") + b"\n", line
        process.stdin.close()
        assert answers.get(timeout=ANSWER_TIMEOUT_S) == b""  # nothing more after the end of input
        assert process.wait(timeout=60) == 0
        assert process.stderr is not None and process.stderr.read() == b""  # no progress bar
    finally:
        process.kill()
        process.wait()
    assert expected[1] == "" and expected[0] == expected[4] and expected[0]


def test_lines_keeps_line_endings_and_goes_on_past_an_unreadable_line(tmp_path: Path) -> None:
    first, last = dev_sentences(2)
    stdin = first.encode("utf-8") + b"\n" + b"\x00\x01 binary\n" + last.encode("gb18030") + b"\r\n"
    result = translate(["--lines"], cli_env(tmp_path), stdin)
    assert result.returncode == 1  # a line could not be read
    lines = result.stdout.decode("utf-8").split("\n")
    alone = [translate([], cli_env(tmp_path), text.encode("utf-8")).stdout.decode("utf-8") for text in (first, last)]
    assert lines == [alone[0].rstrip("\n"), "", alone[1].rstrip("\n") + "\r", ""]  # one line out per line in
    assert result.stderr.decode().startswith("error: line 2 looks binary"), result.stderr.decode()


def test_lines_with_scores_writes_each_lines_scores(tmp_path: Path) -> None:
    chat = dev_sentences(2, skip=10)
    result = translate(["--lines", "--scores"], cli_env(tmp_path), ("\n".join(chat) + "\n").encode("utf-8"))
    assert result.returncode == 0, result.stderr.decode()
    alone = b"".join(translate(["--scores"], cli_env(tmp_path), line.encode("utf-8")).stdout for line in chat)
    assert result.stdout == alone


# --- --stream -----------------------------------------------------------------------------------------------------


def test_stream_writes_the_first_sentences_while_batches_are_still_decoding(tmp_path: Path) -> None:
    text = "\n".join(dev_sentences(60)) + "\n"  # 1,254 characters: long enough for the progress bar
    # one pipe: order of arrival; --progress, since a pipe gets no bar unasked
    process = start(["--stream", "--progress"], cli_env(tmp_path), stderr=subprocess.STDOUT)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(text.encode("utf-8"))
    process.stdin.close()
    chunks: list[bytes] = []
    while chunk := os.read(process.stdout.fileno(), 65536):  # as it arrives
        chunks.append(chunk)
    assert process.wait(timeout=60) == 0
    merged = b"".join(chunks).decode("utf-8")
    updates = [(match.start(), int(match.group(1))) for match in BAR.finditer(merged)]
    first = re.search(r"[A-Za-z]", BAR.sub(lambda bar: " " * len(bar.group()), merged))  # the first English
    assert first is not None, merged
    first_at = first.start()
    english = BAR.sub("", merged)
    later = [percent for at, percent in updates if at > first_at]
    assert later and min(later) < 100, merged[:2000]  # batches were decoded after the first English was out
    assert [percent for at, percent in updates if at < first_at] != []  # it came after the first batch
    assert english.count("\n") == 61  # 60 lines, then the bar's own line break


STREAM_TEXTS = {
    "plain lines": "\n".join(dev_sentences(45, skip=100)) + "\n",
    "paragraphs": "\n\n".join("".join(dev_sentences(5, skip=200 + 5 * n)) for n in range(9)),  # no final newline
    "indentation": "\r\n".join(
        ("    " if n % 3 == 0 else "") + "  ".join(dev_sentences(2, skip=300 + 2 * n)) + (" \t" if n % 4 == 0 else "")
        for n in range(22)
    )
    + "\r\n\r\n",  # CRLF, indented lines, two sentences a line, trailing blanks
}


@pytest.mark.parametrize("name", sorted(STREAM_TEXTS))
def test_stream_is_the_non_streamed_output_byte_for_byte(name: str, tmp_path: Path) -> None:
    stdin = STREAM_TEXTS[name].encode("utf-8")
    whole = translate(["--quiet"], cli_env(tmp_path), stdin)
    streamed = translate(["--quiet", "--stream"], cli_env(tmp_path), stdin)
    assert whole.returncode == 0 and streamed.returncode == 0, streamed.stderr.decode()
    assert streamed.stdout == whole.stdout
    assert streamed.stderr == b""
    assert whole.stdout.count(b"\n") == stdin.count(b"\n") + (not stdin.endswith(b"\n"))  # a real text, translated
    assert re.search(rb"[A-Za-z]{3}", whole.stdout)


def test_stream_with_scores_is_the_non_streamed_scores_byte_for_byte(tmp_path: Path) -> None:
    stdin = STREAM_TEXTS["paragraphs"].encode("utf-8")
    whole = translate(["--quiet", "--scores"], cli_env(tmp_path), stdin)
    streamed = translate(["--quiet", "--scores", "--stream"], cli_env(tmp_path), stdin)
    assert whole.returncode == 0 and streamed.returncode == 0, streamed.stderr.decode()
    assert streamed.stdout == whole.stdout
    objects = [json.loads(line) for line in whole.stdout.decode("utf-8").splitlines()]
    assert objects[-1]["segments"] == len(objects) - 1 >= 45  # every segment's line, then the summary


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--lines", "chat.log"], "--lines translates standard input line by line and takes no FILE"),
        (["--lines", "--format", "html"], "--lines translates lines of plain text"),
        (["--lines", "-o", "out.txt"], "never to -o"),
        (["--lines", "--stream"], "choose one"),
        (["--stream", "page.html"], "html output is written whole"),
        (["--stream", "--format", "srt"], "srt output is written whole"),
        (["--stream", "-o", "out.txt"], "drop one of them"),
    ],
)
def test_filter_options_that_cannot_go_together_are_a_usage_error(
    args: list[str], problem: str, tmp_path: Path
) -> None:
    result = translate(args, cli_env(tmp_path), b"")
    stderr = result.stderr.decode()
    assert result.returncode == 2 and stderr.startswith("usage: python -m handler translate"), stderr
    assert problem in stderr and "Traceback" not in stderr
    assert not (tmp_path / "out.txt").exists()
