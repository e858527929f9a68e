"""``python -m handler translate --encoding``: a file whose encoding cannot be told from its bytes, named."""

from __future__ import annotations

from pathlib import Path

import pytest

from handler.coldstart import Startup
from tests.adapters.test_cli import expected, run_cli

pytestmark = pytest.mark.slow

THANKS = "謝謝\n"  # two characters: as Big5 they read as well in GB18030


def test_a_file_too_short_to_tell_is_refused_naming_encoding(tmp_path: Path, adapter_env: dict[str, str]) -> None:
    source = tmp_path / "thanks.txt"
    source.write_bytes(THANKS.encode("big5"))
    result = run_cli(["translate", str(source)], adapter_env)
    assert result.returncode != 0
    assert result.stdout == b""
    assert "--encoding" in result.stderr.decode()


def test_encoding_decodes_as_told(tmp_path: Path, adapter_env: dict[str, str], startup: Startup) -> None:
    source = tmp_path / "thanks.txt"
    source.write_bytes(THANKS.encode("big5"))
    result = run_cli(["translate", "--encoding", "big5", str(source)], adapter_env)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == expected(startup, THANKS)


def test_encoding_applies_to_each_line_of_lines(adapter_env: dict[str, str], startup: Startup) -> None:
    result = run_cli(["translate", "--lines", "--encoding", "big5"], adapter_env, stdin=THANKS.encode("big5"))
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode() == startup.service.translate_document("謝謝") + "\n"  # type: ignore[union-attr]
