"""``python -m kernelbench`` (also installed as the ``kernelguard`` command).

    python -m kernelbench explain RH-21     # a finding code's documentation
    python -m kernelbench explain --all     # every code
    python -m kernelbench codes             # one line per code

Exit status: 0 on success, 2 for an unknown code or a usage error (one line on stderr).
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["main"]


def _prog() -> str:
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m kernelbench" if name in ("", "__main__.py", "-m", "-c") else name


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=_prog(), description="KernelGuard: documentation of finding codes.")
    sub = parser.add_subparsers(dest="command", metavar="{explain,codes}", parser_class=_Parser)
    p = sub.add_parser("explain", help="print a finding code's documentation (like `ruff rule`)")
    p.add_argument("codes", nargs="*", metavar="CODE", help="RH-21, rh-21, 21 or a detector name")
    p.add_argument("--all", action="store_true", help="every code")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    sub.add_parser("codes", aliases=["list"], help="list every finding code with its summary")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    from kernelbench import explain as ex

    if args.command in ("codes", "list"):
        sys.stdout.write(ex.list_codes())
        return 0
    if args.command != "explain":
        _parser().print_help()
        return 2
    if args.all:
        from kernelbench.reward_hardening.codes import CODES

        codes = list(CODES)
    elif args.codes:
        try:
            codes = [ex.resolve_code(c) for c in args.codes]
        except ex.UnknownCode as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    else:
        print("error: explain needs a code (for example RH-21) or --all", file=sys.stderr)
        return 2
    if args.json:
        print(ex.as_json(codes))
    else:
        sys.stdout.write(("\n" + "-" * 72 + "\n\n").join(ex.explain(c) for c in codes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
