"""Command line: ``python -m handler translate [FILE|-]`` and ``python -m handler serve``.

``translate`` reads a text file (or stdin) in any encoding the file adapters accept, writes the English to
stdout and, for long inputs, a progress bar to stderr; ``.html``/``.md`` files are translated as HTML/Markdown
(markup kept), ``.srt``/``.vtt`` files as subtitles (cue text only, ``handler.text.subtitles``), ``.docx`` files
as Word documents (``handler.text.word_documents``; binary, so written to a file: ``-o FILE`` or stdout redirected,
never to a terminal); ``--format`` overrides the suffix, ``-o/--output FILE`` writes the result there (only once it
is complete) instead of stdout, and ``--glossary FILE`` adds terms. ``--scores`` writes JSON lines
instead: one per translated segment (source, English, their offsets in the input and output with line breaks as
LF, confidence, flags: ``handler.api.scores``), then one with the whole ``translation`` and how many segments are
flagged. ``serve`` starts the HTTP surface (page and API) on the standard library's HTTP server.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import BinaryIO, TextIO

from handler.api.scores import segment_json
from handler.config import RuntimeConfig
from handler.errors import InvalidRequestError, TranslatorError
from handler.service import TextTranslation, TranslateOptions
from handler.storage.files import (
    DOCUMENT_SUFFIXES,
    SUBTITLE_SUFFIXES,
    decode_text,
    format_for,
    is_binary,
    is_subtitles,
    translate_file_bytes,
    translate_file_text,
    translate_text,
)
from handler.text.glossary import load_glossary
from handler.text.markup import FORMATS

PROGRESS_MIN_CHARS = 1_000  # inputs shorter than this finish too fast for a progress bar to help


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


def _read_input(name: str, stdin: BinaryIO) -> bytes:
    if name == "-":
        return stdin.read()
    return Path(name).read_bytes()


def translate_command(args: argparse.Namespace) -> int:
    from handler import coldstart

    fmt = args.format or format_for(args.file)
    if args.scores and (is_subtitles(fmt) or is_binary(fmt)):
        raise InvalidRequestError(
            "--scores is for text, HTML and Markdown; subtitles and Word documents are translated without it"
        )
    if is_binary(fmt) and args.output is None and sys.stdout.isatty():
        raise InvalidRequestError(
            f"refusing to write a binary {fmt} file to the terminal: redirect stdout (> report.en.docx) or use -o FILE"
        )
    raw_options: dict[str, object] = {"format": "text" if is_subtitles(fmt) or is_binary(fmt) else fmt}
    if args.beam_size is not None:
        raw_options["beam_size"] = args.beam_size
    if args.glossary is not None:
        raw_options["glossary"] = load_glossary(args.glossary, "--glossary")
    if args.scores:
        raw_options["scores"] = True
    options = TranslateOptions.from_mapping(raw_options)
    data = _read_input(args.file, sys.stdin.buffer)
    name = "stdin" if args.file == "-" else args.file
    if is_binary(fmt):
        return _translate_binary(args, data, name, fmt, options)
    text, _encoding = decode_text(data, name)
    service = coldstart.get_service(RuntimeConfig.from_env(bundle_dir=args.bundle))
    bar = ProgressBar(sys.stderr) if len(text) >= PROGRESS_MIN_CHARS and not args.quiet else None
    try:
        if args.scores:
            detail = service.translate_document_detailed(text.replace("\r\n", "\n"), options, progress=bar)
        elif is_subtitles(fmt):  # cue text translated, everything else byte for byte (handler.text.subtitles)
            translation = translate_file_text(service, text, fmt, options, name=args.file, progress=bar)
        else:
            translation = translate_text(service, text, options, progress=bar)
    finally:
        if bar is not None:
            bar.finish()
    if args.scores:
        return _write_scores(detail, args.output)
    if translation and not translation.endswith("\n") and not is_subtitles(fmt):
        translation += "\n"
    return _write_output(args.output, translation.encode("utf-8"))


def _translate_binary(args: argparse.Namespace, data: bytes, name: str, fmt: str, options: TranslateOptions) -> int:
    """A Word document: bytes in, bytes out (``translate_file_bytes``); the progress bar only for long ones."""
    from handler import coldstart

    service = coldstart.get_service(RuntimeConfig.from_env(bundle_dir=args.bundle))
    bar = None if args.quiet else ProgressBar(sys.stderr)

    def progress(done: int, total: int) -> None:
        if bar is not None and total >= PROGRESS_MIN_CHARS:
            bar(done, total)

    try:
        payload, _encoding = translate_file_bytes(service, data, name, options, progress=progress, fmt=fmt)
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
    lines = [json.dumps(segment_json(segment), ensure_ascii=False) for segment in detail.segments]
    flagged = sum(1 for segment in detail.segments if segment.assessment.low_confidence)
    summary = {"translation": detail.text, "segments": len(detail.segments), "flagged": flagged}
    lines.append(json.dumps(summary, ensure_ascii=False))
    return _write_output(output, ("\n".join(lines) + "\n").encode("utf-8"))


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
    print(f"serving on http://{host}:{port}/  (Ctrl+C stops)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m handler", description="Chinese→English translation")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--bundle",
        type=Path,
        default=None,
        help="model bundle folder (default: TRANSLATE_BUNDLE_DIR or model_artifacts/default)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    translate = commands.add_parser(
        "translate", parents=[common], help="translate a text, subtitle or .docx file (or stdin) to stdout"
    )
    translate.add_argument("file", nargs="?", default="-", help="a text file, or - for stdin (the default)")
    translate.add_argument("--beam-size", type=int, default=None, help="1-8 (default: TRANSLATE_BEAM_SIZE or 4)")
    translate.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    translate.add_argument(
        "--scores",
        action="store_true",
        help="JSON lines: each segment with its confidence and flags, then the whole translation",
    )
    translate.add_argument(
        "--format",
        choices=(*FORMATS, *SUBTITLE_SUFFIXES.values(), *DOCUMENT_SUFFIXES.values()),
        default=None,
        help="text, html, markdown, srt, vtt or docx (default: by the file's suffix, .html/.htm, .md/.markdown, "
        ".srt, .vtt, .docx; stdin: text)",
    )
    translate.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="write the translation to this file (once complete) instead of stdout; needed for a .docx on a terminal",
    )
    translate.add_argument(
        "--glossary",
        type=Path,
        default=None,
        help="a glossary file (JSON object or TSV term<TAB>target), over TRANSLATE_GLOSSARY_FILE's terms",
    )
    translate.set_defaults(run=translate_command)

    serve = commands.add_parser("serve", parents=[common], help="serve the web page and the JSON API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8080")), help="default: PORT or 8080")
    serve.set_defaults(run=serve_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except TranslatorError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
