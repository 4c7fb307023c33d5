"""``kbqa extensions``: the named extensions, which system offers which, and what each form switches on.

``kbqa extensions`` prints one line per extension (name, the systems that offer it, what it does);
``kbqa extensions --system fc`` prints what ``form: extended`` switches on for that system and how a
run names a partial list; ``--json`` prints the same as one JSON document.
"""

from __future__ import annotations

import argparse

from kbqa_lit.tools.common import print_json


def cmd_extensions(args: argparse.Namespace) -> int:
    """``kbqa extensions``."""
    from kbqa_lit.pipelines.selection.forms import EXTENDED, EXTENSIONS, OFFERED, SYSTEMS, describe

    if args.system is not None:
        offered, extended = list(OFFERED[args.system]), list(EXTENDED[args.system])
        if args.json:
            print_json({"system": args.system, "paper": [], "extended": extended, "offered": offered})
        else:
            print(f"{args.system} paper:    no extension (the paper's method)")
            print(f"{args.system} extended: {', '.join(extended)} (or name some: extensions: [{offered[0]}])")
            if offered != extended:
                print(f"{args.system} offers too: {', '.join(e for e in offered if e not in extended)}")
        return 0
    if args.json:
        print_json(
            {
                name: {"what": what, "systems": [s for s in SYSTEMS if name in OFFERED[s]]}
                for name, what in EXTENSIONS.items()
            }
        )
    else:
        print(describe())
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``kbqa extensions`` to the ``kbqa`` parser."""
    p = subparsers.add_parser(
        "extensions",
        help="the named extensions of each system's extended form",
        description="List the named extensions (ours, on top of each paper's method) and which system offers which.",
    )
    p.add_argument("--system", choices=("coq", "fc", "keqing", "tfs"), default=None, help="one system's forms")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_extensions)
