"""``main``: parse the arguments, check ``--out``, run the command, and turn every error
into one line on standard error and an exit status."""

from __future__ import annotations

import sys

from sk_entmax.cli import report
from sk_entmax.cli._arguments import _parser
from sk_entmax.cli._errors import UsageError, _first_line
from sk_entmax.cli._out_path import _check_out
from sk_entmax.cli._printing import _say


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments (``sys.argv[1:]`` when None).

    Returns
    -------
    int
        The exit status: 0 on success, 2 for a usage error (argparse exits with 2 itself),
        1 for an unexpected error, 130 when interrupted; each error is one line on standard
        error.
    """
    args = _parser().parse_args(argv)
    prefix = f"python -m sk_entmax {args.command}"
    try:
        if args.out is not None:
            _check_out(args.out, getattr(args, "data", None))
        if args.command == "demo":
            # torch is imported here, not for ``--help`` or a ``report``
            from sk_entmax.cli.demo import run_demo

            try:
                run_demo(args.out, quick=args.quick, progress=not args.no_progress)
            except OSError as exc:
                where = exc.filename or args.out or "the report"
                raise UsageError(f"cannot write {where}: {exc.strerror or exc}") from None
        else:
            report._report(args)
    except UsageError as exc:
        _say(f"{prefix}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prefix}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug or a case not foreseen: still one line, no traceback
        _say(f"{prefix}: error: {type(exc).__name__}: {_first_line(exc)}", file=sys.stderr)
        return 1
    return 0
