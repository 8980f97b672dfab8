"""The report-shape check: required H2 headings in a Markdown file.

    python workflows/checks/report_shape.py --require Summary [--require ...]
        --stage STAGE --output-path PATH

Prints one JSON line with a boolean ``pass``, ``findings`` and ``findings_count``; exits 0
whether the file passes or not (nerve reads any other exit as a script error).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--require", action="append", default=[])
    parser.add_argument("--stage", default="")
    parser.add_argument("--output-path", "--file-path", dest="path", required=True)
    args = parser.parse_args()
    try:
        text = Path(args.path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(json.dumps({"pass": False, "findings": [f"cannot read {args.path}: {exc}"]}))
        return
    headings = [line[3:].strip() for line in text.splitlines() if line.startswith("## ")]
    findings = [f"missing section '## {name}'" for name in args.require if name not in headings]
    report = {
        "pass": not findings,
        "findings": findings,
        "findings_count": len(findings),
        "headings": headings,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
