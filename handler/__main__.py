"""``python -m handler``: the command line (``handler.adapters.cli``)."""

from handler.adapters.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
