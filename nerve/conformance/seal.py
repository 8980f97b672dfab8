"""Conformance checker S1 (epoch seals, docs/sealing.md): every case of the vector verified
as ``nerve audit verify --seed`` would, against the log heads the case gives.

A case holds the seal notes, the log as the verifier finds it (``manifest_line_hashes``:
blake3 of each manifest line, without its newline; ``link_ids``: the surfacing chain's
link ids, in order), the time of the check, and what must come out: ``{"ok": true,
"epochs": n}`` or ``{"ok": false, "epoch": n, "kind": "..."}``.
"""

from __future__ import annotations

from typing import Any

from nerve.seal import Seed
from nerve.seal.verify import LogView, SealReport, verify


def run_case(seed: Seed, case: dict[str, Any]) -> SealReport:
    """One case of an S1 vector verified."""
    log = LogView(
        [bytes.fromhex(h) for h in case["manifest_line_hashes"]],
        {},
        [bytes.fromhex(h) for h in case["link_ids"]],
    )
    return verify(seed, list(case["notes"]), log, int(case["now_ns"]))


def outcome(report: SealReport) -> dict[str, Any]:
    """What a case's ``expect`` states of a verification."""
    if report.failure is None:
        return {"ok": True, "epochs": report.epochs}
    return {"ok": False, "epoch": report.failure.epoch, "kind": report.failure.kind}


def check_s1(vec: dict[str, Any]) -> tuple[bool, str]:
    seed = Seed.parse(str(vec["seed"]))
    for case in vec["cases"]:
        got = outcome(run_case(seed, case))
        if got != case["expect"]:
            return False, f"case {case['name']!r}: got {got}, expected {case['expect']}"
    return True, f"{len(vec['cases'])} cases of epoch seals as expected"


CHECKERS = {"S1": check_s1}
