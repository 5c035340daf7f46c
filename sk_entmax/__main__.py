"""Command line: ``python -m sk_entmax demo``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m sk_entmax", description="Exactly sparse probabilities."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="show exact zeros side by side on bundled data (seconds)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from sk_entmax._demo import run_demo

        run_demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
