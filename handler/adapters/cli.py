"""Command line: ``python -m handler translate [FILE|-]`` and ``python -m handler serve``.

``translate`` reads a text file (or stdin) in any encoding the file adapters accept, writes the English to
stdout and, for long inputs, a progress bar to stderr; any other file in its format by its suffix
(``handler.formats``: ``.html``/``.md`` with their markup kept, subtitles' cue text, office documents, e-books and
localization files; a binary one, such as a ``.docx``, is written to a file: ``-o FILE`` or stdout redirected,
never to a terminal); ``--format`` overrides the suffix, ``-o/--output FILE`` writes the result there (only once it
is complete) instead of stdout, and ``--glossary FILE`` adds terms. ``--scores`` writes JSON lines
instead: one per translated segment (source, English, their offsets in the input and output with line breaks as
LF, confidence, flags: ``handler.api.scores``), then one with the whole ``translation`` and how many segments are
flagged.

Two ways of writing the English as it goes, for pipes (a Unix filter):

- ``--stream [FILE]`` reads the whole text, then writes each sentence's English as soon as it and every sentence
  before it are done (``TranslationService.translate_document_stream``), flushing after each: the whitespace and line
  breaks between sentences come from the source exactly as ``Document.join`` writes them (``Joiner``: what separates
  a sentence from the one before is written with it), so the bytes are those of the same command without
  ``--stream``. Plain text only; with ``--scores`` each segment's JSON line is written as it is done.
- ``--lines`` reads standard input a line at a time and writes (and flushes) each line's English before it reads
  the next: ``tail -f chat.log | python -m handler translate --lines``. An empty line gives an empty line; a line
  that cannot be read (not UTF-8 or GB18030) gives an empty line and an error on stderr (exit status 1 at the end);
  the translation memory makes repeated lines cheap. With ``--scores``: each line's ``--scores`` output.

Several files, or a folder, go with an output folder: ``-O out/ a.txt b.srt`` or ``-O out/ folder/`` writes each
translation into ``out/`` under the same name (a folder's files at the same relative paths), each file atomically;
a file that fails is reported on stderr and the rest are still translated. The output folder may be no input's
folder, so that no input is ever overwritten.

The progress bar (``\r`` updates on stderr) is drawn only when stderr is a terminal, or with ``--progress``; never
into a log file or a pipe otherwise. ``--version`` prints the runtime's version, the model and its bundle hash.

Exit status (``EXIT_*``, after sysexits.h where one fits): 0 done; 1 bad input (a file that cannot be read or
translated, an option value refused: 1 as before, so scripts that test for it keep working); 2 a usage error
(argparse); 69 ``EX_UNAVAILABLE``, the model cannot be used (its bundle missing or damaged): no input would translate;
75 ``EX_TEMPFAIL``, ``--timeout`` passed before the translation could finish: the same command may succeed with more
time; 130 interrupted (Ctrl-C, 128 + SIGINT, as shells report it), quietly. With several files: the worst of their
statuses (69 over 75 over 1).

``serve`` starts the HTTP surface (page and API) on the standard library's HTTP server.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
import tomllib
from collections.abc import Callable, Generator, Iterator
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import BinaryIO, NoReturn, TextIO

from handler.api.scores import segment_json
from handler.config import RuntimeConfig
from handler.errors import DeadlineExceededError, InvalidRequestError, ModelUnavailableError, TranslatorError
from handler.formats import (
    FILE_SUFFIXES,
    FORMAT_NAMES,
    FileFormat,
    FileTranslator,
    format_for,
    format_named,
    translate_file,
)
from handler.formats.encodings import decode_text
from handler.model.confidence import ScoredSegment
from handler.options import SOURCE_SPELLINGS
from handler.service import StreamEvent, TextTranslation, TranslateOptions, TranslationService
from handler.streaming import StreamedUnit, StreamProgress
from handler.text.glossary import load_glossary
from handler.text.segmentation import Joiner, Segment

PROGRESS_MIN_CHARS = 1_000  # inputs shorter than this finish too fast for a progress bar to help
DISTRIBUTION = "zh-en-translate-function"  # pyproject.toml's [project] name

EXIT_OK = 0
EXIT_BAD_INPUT = 1  # a file that cannot be read or translated, an option value refused
EXIT_USAGE = 2  # argparse's
EXIT_MODEL_UNAVAILABLE = 69  # sysexits.h EX_UNAVAILABLE: the bundle is missing or damaged
EXIT_DEADLINE = 75  # sysexits.h EX_TEMPFAIL: --timeout passed; more time may succeed
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C stopped
# which of several files' statuses is the command's: the one with the widest cause
SEVERITY = (EXIT_OK, EXIT_BAD_INPUT, EXIT_DEADLINE, EXIT_MODEL_UNAVAILABLE)
EXIT_CODES_HELP = (
    "exit status: 0 done; 1 bad input (a file that cannot be read or translated); 2 usage error; 69 the model "
    "cannot be used (bundle missing or damaged); 75 --timeout passed; 130 interrupted (Ctrl-C). Several files: the "
    "worst of theirs."
)


class ProgressBar:
    """``[#######.............]  35%  1,234 / 3,500 characters`` on one line of ``stream``."""

    width = 30

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        percent = 100 if total <= 0 else min(100, done * 100 // total)
        if percent == self.shown:
            return
        self.shown = percent
        filled = self.width * percent // 100
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r[{bar}] {percent:3d}%  {done:,} / {total:,} characters")
        self.stream.flush()

    def finish(self) -> None:
        if self.shown >= 0:
            self.stream.write("\n")
            self.stream.flush()


def exit_status(error: BaseException) -> int:
    """The command's exit status for an error that stopped a translation."""
    if isinstance(error, ModelUnavailableError):  # BundleError too
        return EXIT_MODEL_UNAVAILABLE
    if isinstance(error, DeadlineExceededError):
        return EXIT_DEADLINE
    return EXIT_BAD_INPUT


def show_progress(args: argparse.Namespace) -> bool:
    """The progress bar's ``\r`` updates only where a person watches: stderr a terminal, or ``--progress``."""
    return not args.quiet and (args.progress or sys.stderr.isatty())


def seconds(value: str) -> float:
    """``--timeout``'s value: a positive number of seconds (argparse reports anything else as a usage error)."""
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not number > 0 or number == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds")
    return number


def _deadline(args: argparse.Namespace) -> float | None:
    return None if args.timeout is None else time.monotonic() + args.timeout


def _read_input(name: str, stdin: BinaryIO) -> bytes:
    if name == "-":
        return stdin.read()
    return Path(name).read_bytes()


def filter_usage_problem(args: argparse.Namespace) -> str | None:
    """Why ``--stream`` or ``--lines`` (or several files, or ``-O``) cannot go with the other arguments given, or None
    when they can."""
    problem = output_folder_problem(args)
    if problem is not None:
        return problem
    if args.lines:
        if args.stream:
            return (
                "--lines and --stream both write the English as it goes: choose one (--lines for a stream of lines "
                "such as tail -f, --stream for a whole text)"
            )
        if args.file != "-":
            return (
                f"--lines translates standard input line by line and takes no FILE (got {args.file}): "
                f"pipe it in, e.g. tail -f {args.file} | python -m handler translate --lines"
            )
        if args.format not in (None, "text"):
            return f"--lines translates lines of plain text; --format {args.format} needs the whole file: drop --lines"
        if args.output is not None:
            return "--lines writes each line's English to stdout as it goes, never to -o: redirect stdout instead"
    if args.stream:
        fmt = file_format(args)
        if fmt.name != "text":
            return (
                f"--stream writes plain text sentence by sentence; {fmt.name} output is written whole, once complete: "
                "drop --stream (or give --format text to translate the file as plain text)"
            )
        if args.output is not None:
            return "--stream writes to stdout as it goes; -o writes the file once it is complete: drop one of them"
    return None


def output_folder_problem(args: argparse.Namespace) -> str | None:
    """Why several files, a folder or ``-O DIR`` cannot go with the other arguments given, or None when they can."""
    folders = [name for name in args.files if name != "-" and Path(name).is_dir()]
    if args.output_dir is None:
        if len(args.files) > 1:
            return "several files need an output folder: -O DIR writes each translation there under the same name"
        if folders:
            return f"{folders[0]} is a folder: give an output folder with -O DIR to translate the files in it"
        return None
    if "-" in args.files or not args.files:
        return "-O DIR translates files into a folder; stdin (-) has no name there: use -o FILE or stdout"
    for flag, given in (("-o", args.output is not None), ("--stream", args.stream), ("--lines", args.lines)):
        if given:
            return f"-O DIR writes each file whole into the folder; {flag} does not go with it: drop one of them"
    out = args.output_dir.resolve()
    for folder in folders:
        if Path(folder).resolve() == out:
            return f"the output folder {args.output_dir} is the input folder: choose another -O, never an input's"
    plan = folder_plan(args.files, args.output_dir)
    inputs = {source.resolve() for source, _ in plan}
    targets: dict[Path, str] = {}
    for source, target in plan:
        if source.resolve().parent == out or target.resolve() in inputs:
            return f"the output folder {args.output_dir} holds the input {source}: choose another -O, never an input's"
        if target.resolve() in targets:
            return f"{source} and {targets[target.resolve()]} would both be written to {target}: translate them apart"
        targets[target.resolve()] = str(source)
    return None


def folder_plan(names: list[str], output_dir: Path) -> list[tuple[Path, Path]]:
    """Each input file and where its translation goes: a file to ``output_dir``/its name, a folder's files (hidden
    ones left out) to the same relative paths under ``output_dir``."""
    plan: list[tuple[Path, Path]] = []
    for name in names:
        path = Path(name)
        if not path.is_dir():
            plan.append((path, output_dir / path.name))
            continue
        for source in sorted(path.rglob("*")):
            relative = source.relative_to(path)
            if source.is_file() and not any(part.startswith(".") for part in relative.parts):
                plan.append((source, output_dir / relative))
    return plan


def translate_command(args: argparse.Namespace) -> int:
    if args.lines:
        return _translate_lines(args)
    if args.output_dir is not None:
        return _translate_into_folder(args)
    return _translate_one(args)


def _translate_into_folder(args: argparse.Namespace) -> int:
    """``-O DIR``: each file translated into the folder; a failure reported on stderr and the rest still translated
    (but none once the model proved unusable); the worst status."""
    worst = EXIT_OK
    for source, target in folder_plan(args.files, args.output_dir):
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            _translate_one(replace_args(args, file=str(source), output=target))
        except (TranslatorError, OSError) as error:
            print(f"error: {source}: {error}", file=sys.stderr, flush=True)
            status = exit_status(error)
            worst = max(worst, status, key=SEVERITY.index)
            if status == EXIT_MODEL_UNAVAILABLE:
                return status
    return worst


def replace_args(args: argparse.Namespace, **changes: object) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), **changes})


def _translate_one(args: argparse.Namespace) -> int:
    from handler import coldstart

    fmt = file_format(args)
    if args.scores and fmt.service_format is None:
        raise InvalidRequestError(
            f"--scores is for text, HTML and Markdown; {fmt.name} files are translated without it"
        )
    if fmt.binary and args.output is None and sys.stdout.isatty():
        raise InvalidRequestError(
            f"refusing to write a binary {fmt.name} file to the terminal: redirect stdout (> translated"
            f"{fmt.suffixes[0]}) or use -o FILE"
        )
    options = _options(args, fmt.service_format or "text")
    data = _read_input(args.file, sys.stdin.buffer)
    name = "stdin" if args.file == "-" else args.file
    if fmt.binary:
        return _translate_binary(args, data, name, fmt, options)
    source = fmt.read(data, name, args.encoding)
    text = source.text
    service = coldstart.get_service(RuntimeConfig.from_env(bundle_dir=args.bundle))
    bar = ProgressBar(sys.stderr) if len(text) >= PROGRESS_MIN_CHARS and show_progress(args) else None
    deadline = _deadline(args)
    if args.stream:
        if sys.stdout.isatty():
            bar = None  # the English itself shows how far it got; a bar would be drawn over it
        return _translate_streamed(
            service, text, options, sys.stdout.buffer, bar, scores=args.scores, deadline=deadline
        )
    try:
        if args.scores:
            detail = service.translate_document_detailed(
                text.replace("\r\n", "\n"), options, deadline=deadline, progress=bar
            )
        else:  # in its format: markup kept, or (subtitles) cue text translated and everything else byte for byte
            translator = FileTranslator(service, options, deadline=deadline, progress=bar)
            translation = fmt.translate(source, translator).decode("utf-8")
    finally:
        if bar is not None:
            bar.finish()
    if args.scores:
        return _write_scores(detail, args.output)
    if translation and not translation.endswith("\n") and fmt.service_format is not None:
        translation += "\n"
    return _write_output(args.output, translation.encode("utf-8"))


def _options(args: argparse.Namespace, fmt: str) -> TranslateOptions:
    raw_options: dict[str, object] = {"format": fmt}
    if args.beam_size is not None:
        raw_options["beam_size"] = args.beam_size
    if args.glossary is not None:
        raw_options["glossary"] = load_glossary(args.glossary, "--glossary")
    if args.scores:
        raw_options["scores"] = True
    if args.source is not None:
        raw_options["source"] = args.source
    return TranslateOptions.from_mapping(raw_options)


def _translate_streamed(
    service: TranslationService,
    text: str,
    options: TranslateOptions,
    out: BinaryIO,
    bar: ProgressBar | None,
    *,
    scores: bool,
    deadline: float | None = None,
) -> int:
    """``--stream``: each sentence's English written and flushed as it is done, with the source's whitespace and
    line breaks between (``Joiner``), byte for byte the non-streamed output; ``--scores``: each segment's JSON line
    as it is done, then the summary line."""
    crlf = "\r\n" in text and not scores  # as translate_text: the line endings come back as they were
    text = text.replace("\r\n", "\n")
    events = service.translate_document_stream(text, options, deadline=deadline)
    # the service segments the text in the model's script; the separators are copied from it, as Document.join does
    joiner = Joiner(service.scripts.to_model_script(text, options.source))
    written: list[str] = []  # the English so far (LF line breaks)
    segments = flagged = 0
    finished: str | None = None  # the whole translation, from the stream's last event

    def write(piece: str) -> None:
        written.append(piece)
        out.write((piece.replace("\n", "\r\n") if crlf else piece).encode("utf-8"))
        out.flush()

    try:
        for event in events:
            if isinstance(event, StreamProgress):
                if bar is not None:
                    bar(event.done, event.total)
            elif isinstance(event, StreamedUnit):
                piece = joiner.add(_segment_of(event, joiner), event.translation)
                if not scores:
                    write(piece)
                    continue
                at = sum(map(len, written)) + len(piece) - len(event.translation)  # where its English begins
                written.append(piece)
                lines = [_scores_line(_moved(segment, at)) for segment in event.segments]
                segments += len(lines)
                flagged += sum(1 for segment in event.segments if segment.assessment.low_confidence)
                out.write("".join(lines).encode("utf-8"))
                out.flush()
            else:
                finished = event.translations[0].text
    finally:
        _close(events)
        if bar is not None:
            bar.finish()
    tail = joiner.finish()
    if finished is None or "".join(written) + tail != finished:  # Joiner is Document.join's code: a bug
        raise RuntimeError("the streamed English differs from the whole translation: run without --stream")
    if scores:
        summary = {"translation": finished, "segments": segments, "flagged": flagged}
        out.write((json.dumps(summary, ensure_ascii=False) + "\n").encode("utf-8"))
        out.flush()
        return 0
    if finished and not finished.endswith("\n"):
        tail += "\n"
    write(tail)
    return 0


def _segment_of(unit: StreamedUnit, joiner: Joiner) -> Segment:
    """A plain-text unit (one segment) where it is in the joiner's source: the first occurrence after the segment
    before it, which is its own place (only whitespace lies between two segments)."""
    start = joiner.source.find(unit.source, joiner.position)
    if start < 0:
        raise RuntimeError(f"segment {unit.index} ({unit.source!r}) is not in the text after offset {joiner.position}")
    return Segment(unit.source, start, start + len(unit.source))


def _moved(segment: ScoredSegment, at: int) -> ScoredSegment:
    """A streamed segment (its English's offsets within its unit) with offsets in the whole translation."""
    span = segment.translation_span
    return replace(segment, translation_span=None if span is None else (span[0] + at, span[1] + at))


def _scores_line(segment: ScoredSegment) -> str:
    return json.dumps(segment_json(segment), ensure_ascii=False) + "\n"


def _close(events: Iterator[StreamEvent]) -> None:
    """Stop a stream's decoding (a reader that went away, an error): its generator's ``finally`` runs now."""
    if isinstance(events, Generator):
        events.close()


def _translate_lines(args: argparse.Namespace) -> int:
    """``--lines``: standard input a line at a time, each line's English written and flushed before the next line is
    read (``readline``, never to the end of input first)."""
    from handler import coldstart

    options = _options(args, "text")
    service = coldstart.get_service(RuntimeConfig.from_env(bundle_dir=args.bundle))
    return translate_lines(
        service, options, sys.stdin.buffer, sys.stdout.buffer, scores=args.scores, encoding=args.encoding
    )


def translate_lines(
    service: TranslationService,
    options: TranslateOptions,
    source: BinaryIO,
    out: BinaryIO,
    *,
    scores: bool,
    encoding: str | None = None,
) -> int:
    """Each line of ``source`` (decoded as ``encoding`` when named, else each line detected on its own) translated
    as a one-line document and written to ``out`` (flushed) before the next line is read; returns the exit status:
    1 when a line could not be read (it gave an empty line, and an error on stderr), else 0."""
    status = 0
    number = 0
    while raw := source.readline():
        number += 1
        content = raw.rstrip(b"\n")
        ending = "\n"
        if content.endswith(b"\r") and raw.endswith(b"\n"):
            content, ending = content[:-1], "\r\n"
        try:
            line = decode_text(content, f"line {number}", encoding)[0] if content else ""
        except InvalidRequestError as error:
            print(f"error: {error}; it is written as an empty line", file=sys.stderr, flush=True)
            status, line = 1, ""
        if scores:
            detail = service.translate_document_detailed(line, options)
            payload = "".join(map(_scores_line, detail.segments)) + _scores_summary(detail)
        else:
            payload = service.translate_document(line, options) + ending
        out.write(payload.encode("utf-8"))
        out.flush()
    return status


def _scores_summary(detail: TextTranslation) -> str:
    flagged = sum(1 for segment in detail.segments if segment.assessment.low_confidence)
    summary = {"translation": detail.text, "segments": len(detail.segments), "flagged": flagged}
    return json.dumps(summary, ensure_ascii=False) + "\n"


def file_format(args: argparse.Namespace) -> FileFormat:
    """The input's format: ``--format``, else its suffix's (``handler.formats``, as for uploads and the APIs)."""
    return format_named(args.format) if args.format else format_for(args.file)


def _translate_binary(
    args: argparse.Namespace, data: bytes, name: str, fmt: FileFormat, options: TranslateOptions
) -> int:
    """A Word document: bytes in, bytes out (``handler.formats.translate_file``); the progress bar only for long
    ones."""
    from handler import coldstart

    service = coldstart.get_service(RuntimeConfig.from_env(bundle_dir=args.bundle))
    bar = ProgressBar(sys.stderr) if show_progress(args) else None

    def progress(done: int, total: int) -> None:
        if bar is not None and total >= PROGRESS_MIN_CHARS:
            bar(done, total)

    try:
        payload = translate_file(
            data, name, service, options, deadline=_deadline(args), progress=progress, file_format=fmt
        ).data
    finally:
        if bar is not None:
            bar.finish()
    return _write_output(args.output, payload)


def _write_output(output: Path | None, payload: bytes) -> int:
    """``payload`` to stdout, or to ``output`` through a temporary file renamed into place (never half-written)."""
    if output is None:
        sys.stdout.buffer.write(payload)
        sys.stdout.buffer.flush()
        return 0
    partial = output.with_name(f".{output.name}.partial")
    try:
        partial.write_bytes(payload)
        os.replace(partial, output)
    finally:
        partial.unlink(missing_ok=True)
    return 0


def _write_scores(detail: TextTranslation, output: Path | None) -> int:
    payload = "".join(map(_scores_line, detail.segments)) + _scores_summary(detail)
    return _write_output(output, payload.encode("utf-8"))


def runtime_version() -> str:
    """This runtime's version: its installed distribution's, else the checkout's pyproject.toml's, else unknown."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return "unknown"
    return str(project.get("version", "unknown")) if project.get("name") == DISTRIBUTION else "unknown"


def version_command(args: argparse.Namespace) -> int:
    """``--version``: the runtime's version, then the model and its bundle hash (read from the bundle's manifest;
    nothing translated). A bundle that cannot be read is the unusable model's error and status."""
    from handler.model.loader import load_bundle

    print(f"{DISTRIBUTION} {runtime_version()} (Python {platform.python_version()})", flush=True)
    bundle_dir = RuntimeConfig.from_env(bundle_dir=args.bundle).bundle_dir
    manifest = load_bundle(bundle_dir, verify_hashes=False)
    print(f"model {manifest.name}, bundle {manifest.bundle_hash()} ({bundle_dir})")
    return EXIT_OK


def serve_command(args: argparse.Namespace) -> int:
    from handler.adapters.local_server import make_server
    from handler.api.router import HttpApi
    from handler.coldstart import start

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    startup = start(RuntimeConfig.from_env(bundle_dir=args.bundle))
    server = make_server(HttpApi(startup), args.host, args.port)
    host, port = args.host, server.server_address[1]
    if startup.error is not None:
        print(f"the translator is unavailable (answers 503): {startup.error}", file=sys.stderr)
    if startup.licence.notice:  # a non-commercial demo bundle (handler.model.licence) says so
        print(startup.licence.notice, file=sys.stderr)
    print(f"serving on http://{host}:{port}/  (Ctrl+C stops)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _add_tool_arguments(translate: argparse.ArgumentParser) -> None:
    """``translate``'s options for running it as a Unix tool: the variant, progress, a time limit, the version, and
    an output folder for several files."""
    translate.add_argument(
        "--source",
        choices=SOURCE_SPELLINGS,
        default=None,
        help="the text's Chinese variant, e.g. zh-Hans, zh-Hant, zh-TW, zh-HK (default: auto, detected)",
    )
    translate.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    translate.add_argument(
        "--progress",
        action="store_true",
        help="draw the progress bar on stderr even when it is not a terminal (by default only on a terminal)",
    )
    translate.add_argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="give up (exit status 75) on a file whose translation cannot finish within SECONDS (default: no limit)",
    )
    translate.add_argument(
        "--version",
        action="store_true",
        help="print the runtime's version, the model and its bundle hash, and exit",
    )
    translate.add_argument(
        "-O",
        "--output-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="write each file's translation into DIR under the same name (a folder's files at their relative "
        "paths); for several files or a folder; never an input's folder",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m handler", description="Chinese→English translation", epilog=EXIT_CODES_HELP
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--bundle",
        type=Path,
        default=None,
        help="model bundle folder (default: TRANSLATE_BUNDLE_DIR or model_artifacts/default)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    translate = commands.add_parser(
        "translate",
        parents=[common],
        help="translate a file (or stdin) to stdout",
        description=f"Translate a file ({', '.join(FILE_SUFFIXES)}) or stdin to English.",
        epilog=EXIT_CODES_HELP,
    )
    translate.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="a file, or - for stdin (the default); several files or a folder need -O DIR",
    )
    translate.add_argument("--beam-size", type=int, default=None, help="1-8 (default: TRANSLATE_BEAM_SIZE or 4)")
    _add_tool_arguments(translate)
    translate.add_argument(
        "--scores",
        action="store_true",
        help="JSON lines: each segment with its confidence and flags, then the whole translation",
    )
    translate.add_argument(
        "--format",
        choices=FORMAT_NAMES,
        default=None,
        help=f"{', '.join(FORMAT_NAMES)} (default: by the file's suffix, {', '.join(FILE_SUFFIXES)}; stdin: text)",
    )
    translate.add_argument(
        "--encoding",
        default=None,
        help="the input's encoding, e.g. big5, big5hkscs, gb18030, utf-16 (default: detected: UTF-8, a "
        "byte-order mark, or GB18030 and Big5 told apart by their characters; too short to tell is refused)",
    )
    translate.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="write the translation to this file (once complete) instead of stdout; needed for a binary file (.docx) "
        "on a terminal",
    )
    translate.add_argument(
        "--glossary",
        type=Path,
        default=None,
        help="a glossary file (JSON object or TSV term<TAB>target), over TRANSLATE_GLOSSARY_FILE's terms",
    )
    translate.add_argument(
        "--stream",
        action="store_true",
        help="write each sentence's English as soon as it is done (plain text; the same bytes as without --stream)",
    )
    translate.add_argument(
        "--lines",
        action="store_true",
        help="translate stdin line by line, each line's English written before the next line is read "
        "(tail -f chat.log | python -m handler translate --lines)",
    )
    translate.set_defaults(run=translate_command, usage_error=translate.error)

    serve = commands.add_parser("serve", parents=[common], help="serve the web page and the JSON API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8080")), help="default: PORT or 8080")
    serve.set_defaults(run=serve_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "translate":
        args.file = args.files[0] if args.files else "-"
        if args.version:
            args.run = version_command
        problem = None if args.version else filter_usage_problem(args)
        if problem is not None:
            usage_error: Callable[[str], NoReturn] = args.usage_error
            usage_error(problem)  # the usage and the problem on stderr, exit status 2
    try:
        return int(args.run(args))
    except BrokenPipeError:  # the reader went away (| head -n 3): stop quietly, as Unix filters do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that the exit's flush finds no pipe
        return 1
    except KeyboardInterrupt:  # Ctrl+C on a pipeline (tail -f | ... --lines): no traceback
        return EXIT_INTERRUPTED
    except (TranslatorError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return exit_status(error)


if __name__ == "__main__":
    sys.exit(main())
