"""Regenerate N1, the payload canonical-form vector (deterministic; run from the repo root).

python conformance/generate_payloads.py [OUT_DIR]     # default: conformance/v1

Each case is a JSON text as a writer might send it (any spacing, key order and escapes) and
the RFC 8785 (JCS) text nerve stores for it, with that text's payload address.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nerve.canonical import canonical_json
from nerve.events import cid

HERE = Path(__file__).resolve().parent / "v1"


def _deep(levels: int) -> str:
    """``levels`` of nesting, objects and arrays alternating, around a float."""
    text = "0.5"
    for level in range(levels):
        text = f'{{"d{level}": {text}}}' if level % 2 else f"[{text}]"
    return text


CASES = [
    ("floats", "[1e-7, 1E21, 1e20, -0.0, 0.30000000000000004, 4.50, 2e-3, 1e-27, 5e-324]"),
    ("integers", "[0, -1, 9007199254740991, 1700000000000000001, -18446744073709551616]"),
    ("number text the RFC shows", "[333333333.33333329, 1E30, 0.000001, 9.999999999999997e-7]"),
    (
        "key order: UTF-16 code units",
        '{"\\ue000": "private use", "\\ud83d\\ude00": "non-BMP", "\\ufb33": "dalet",'
        ' "\\u00f6": "o", "\\r": "cr", "1": "one", "\\udbff\\udffd": "plane 16 private use"}',
    ),
    (
        "escapes",
        '{"s": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/\\u007f\\u2028\\b\\t"}',
    ),
    ("literals and empties", '{"t": true, "f": false, "n": null, "a": [], "o": {}, "s": ""}'),
    ("deep nesting (64 levels, the limit)", _deep(64)),
]


def build() -> dict[str, object]:
    cases = []
    for name, text in CASES:
        data = canonical_json(json.loads(text))
        cases.append(
            {
                "name": name,
                "input": text,
                "canonical": data.decode("utf-8"),
                "payload_cid": cid(data).hex(),
            }
        )
    return {
        "vector": "N1",
        "description": "Structured payloads in RFC 8785 (JCS) form and their addresses; "
        "integers beyond 2^53 are written exactly.",
        "cases": cases,
    }


def main(folder: Path = HERE) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(build(), indent=2, ensure_ascii=False) + "\n"
    (folder / "n1_payload_jcs.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
