"""The conflict-markers check: lines left over from an unresolved merge.

python workflows/checks/conflict_markers.py --stage STAGE --file-path PATH
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

MARKERS = ("<<<<<<< ", ">>>>>>> ")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stage", default="")
    parser.add_argument("--file-path", "--output-path", dest="path", required=True)
    args = parser.parse_args()
    try:
        lines = Path(args.path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        print(json.dumps({"pass": False, "findings": [f"cannot read {args.path}: {exc}"]}))
        return
    opened = False  # a bare ======= is a heading underline unless a conflict is open
    findings = []
    for n, line in enumerate(lines, 1):
        if line.startswith(MARKERS) or (opened and line == "======="):
            findings.append(f"line {n}: {line[:40]}")
        opened = (opened or line.startswith("<<<<<<< ")) and not line.startswith(">>>>>>> ")
    print(json.dumps({"pass": not findings, "findings": findings, "findings_count": len(findings)}))


if __name__ == "__main__":
    main()
