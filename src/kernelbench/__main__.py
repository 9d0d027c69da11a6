"""The ``kernelguard`` command (also ``python -m kernelbench``).

    kernelguard check key=value ...      # one candidate      (scripts/run_and_check.py)
    kernelguard eval key=value ...       # a run directory    (scripts/eval_from_generations.py)
    kernelguard analyze key=value ...    # fast_p / verified   (scripts/benchmark_eval_analysis.py)
    kernelguard demo-run key=value ...   # runs/<name> from the demo solutions (scripts/make_demo_run.py)
    kernelguard redteam --output ...     # the red-team suite  (scripts/reward_hardening_redteam.py)
    kernelguard explain RH-21            # a finding code's documentation (--all: every code)
    kernelguard codes                    # one line per code

The evaluation subcommands take exactly the scripts' ``key=value`` keys and return
their exit codes; ``kernelguard SUBCOMMAND --help`` prints the keys.  ``explain``
and ``codes`` answer without importing torch.  Exit status of ``explain``/``codes``:
0 on success, 2 for an unknown code or a usage error (one line on stderr).
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


# subcommand -> (module of kernelbench.commands, the script it stands for, one-line help)
KEY_VALUE_COMMANDS = {
    "check": ("check", "run_and_check.py", "evaluate one candidate against its reference"),
    "eval": ("evaluate", "eval_from_generations.py", "evaluate the kernels of a run directory"),
    "analyze": ("analyze", "benchmark_eval_analysis.py", "fast_p and verified_fast_p of a run"),
    "demo-run": ("demo", "make_demo_run.py", "fill runs/<run_name> with the demo solutions"),
}
REDTEAM_SCRIPT = "reward_hardening_redteam.py"


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=_prog(), description="KernelGuard: evaluate kernels with an integrity verdict, "
                                               "analyse runs, and explain finding codes.")
    names = [*KEY_VALUE_COMMANDS, "redteam", "explain", "codes"]
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(names) + "}", parser_class=_Parser)
    for name, (_, script, text) in KEY_VALUE_COMMANDS.items():
        p = sub.add_parser(name, help=f"{text} (key=value, as scripts/{script})", add_help=False)
        p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser("redteam", help=f"run the red-team suite (options as scripts/{REDTEAM_SCRIPT})",
                       add_help=False)
    p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser("explain", help="print a finding code's documentation (like `ruff rule`)")
    p.add_argument("codes", nargs="*", metavar="CODE", help="RH-21, rh-21, 21 or a detector name")
    p.add_argument("--all", action="store_true", help="every code")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    sub.add_parser("codes", aliases=["list"], help="list every finding code with its summary")
    return parser


def _run_key_value(name: str, args: list[str]) -> int:
    import importlib

    module_name, script, _ = KEY_VALUE_COMMANDS[name]
    module = importlib.import_module(f"kernelbench.commands.{module_name}")
    if any(a in ("-h", "--help") for a in args):
        import re

        doc = (module.__doc__ or "").replace(f"python scripts/{script}", f"kernelguard {name}")
        sys.stdout.write(re.sub(r"(\S) {2,}(?=\S)", r"\1 ", doc))  # continuation lines joined by the docstring
        return 0
    entry = module.entry if hasattr(module, "entry") else module.main
    result = entry(list(args))
    return result if isinstance(result, int) else 0


def _run_redteam(args: list[str]) -> int:
    import importlib.util

    from kernelbench.cli import project_root

    path = project_root() / "scripts" / REDTEAM_SCRIPT
    if not path.is_file():
        print(f"error: redteam runs from a source checkout (scripts/{REDTEAM_SCRIPT} not found under "
              f"{project_root()})", file=sys.stderr)
        return 2
    scripts = str(path.parent)
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    spec = importlib.util.spec_from_file_location("kernelguard_redteam", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return int(module.main(list(args)) or 0)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in KEY_VALUE_COMMANDS:  # key=value arguments go to the command untouched
        return _run_key_value(argv[0], argv[1:])
    if argv and argv[0] == "redteam":
        return _run_redteam(argv[1:])
    args = _parser().parse_args(argv)
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
