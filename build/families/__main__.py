"""Print the family of a checkpoint: ``python -m build.families MODEL [--family NAME]``.

The Dockerfile's export stage asks this before it installs a family's build requirements, so that an unusable
``MODEL`` fails the image build at once with the reason (exit status 2), instead of later and with another one.
"""

from __future__ import annotations

import argparse
import sys

from build.errors import ExportError
from build.families import names, resolve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build.families", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="checkpoint folder or Hugging Face hub id")
    parser.add_argument("--family", choices=names(), help="the family to check the folder against")
    args = parser.parse_args(argv)
    try:
        print(resolve(args.model, args.family).name)
    except ExportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
