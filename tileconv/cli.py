"""``python -m tileconv <command>``: the command-line front end.

Each command lives in its own module, which provides ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int`` (the exit code). Modules are imported
when the parser is built; they keep heavy imports (matplotlib, rich) inside functions.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# command -> module implementing it
COMMANDS: dict[str, str] = {
    "verify": "tileconv.verify",
    "bench": "tileconv.bench.cli_bench",
    "sweep": "tileconv.bench.cli_sweep",
    "info": "tileconv.bench.cli_info",
    "tune": "tileconv.dispatch.tune",
}


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, object]]:
    parser = argparse.ArgumentParser(
        prog="python -m tileconv",
        description="tileconv: 2D convolution for PyTorch on NVIDIA GPUs, written in Triton.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = {}
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        modules[name] = module
    return parser, modules


def main(argv: list[str] | None = None) -> int:
    parser, modules = build_parser()
    args = parser.parse_args(argv)
    return int(modules[args.command].run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
