"""``python -m sk_entmax``: the command line, :func:`sk_entmax.cli.main` (see
:mod:`sk_entmax.cli` for the commands, their messages and their exit statuses)."""

import sys

from sk_entmax.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
