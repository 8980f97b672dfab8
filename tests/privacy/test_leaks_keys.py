"""Hostile pass: what a rule withholds must not come back through a payload's *keys* or a
row's *subject*.

A payload's object keys are text like its values (``nerve emit -p '{"ghp_…": 1}'``), and a
subject is what a row is about: a detector, a redact rule and a drop rule see both, at
capture and again when a reader's screen applies a rule added since."""

from __future__ import annotations

import json

import pyarrow as pa

from nerve.events import SourceClass
from nerve.log.drafts import Draft
from nerve.privacy.policy import Policy
from nerve.privacy.screen import Screen
from nerve.privacy.settings import PrivacyConfig

GHP = "ghp_" + "Q7w8E9r0T1" * 3 + "Y2u3I4"
CONFIG = PrivacyConfig.model_validate({
    "rules": [
        {"name": "projx", "regex": "projectx", "action": "drop"},
        {"name": "code", "regex": r"code-\d{4}"},
    ]
})  # fmt: skip
SHELL = int(SourceClass.SHELL)


def _captured(payload: object, subject: str = "") -> Draft | None:
    draft = Draft.of("observation", source=SHELL, line="k", payload=payload, subject=subject)
    return Policy(CONFIG).capture(draft)


def test_a_secret_in_a_payload_key_is_redacted_at_capture() -> None:
    stored = _captured({GHP: 1, "code-1234": 2, "plain": 3})
    assert stored is not None
    text = stored.payload.decode()
    assert GHP not in text and "code-1234" not in text
    assert json.loads(text)["plain"] == 3
    assert "[redacted:github-token]" in text and "[redacted:code]" in text


def test_a_drop_rule_matching_a_payload_key_drops_the_event() -> None:
    assert _captured({"projectx-plan": 1}) is None
    assert _captured({"nested": [{"projectx": True}]}) is None


def _table(subjects: list[str], lines: list[str], payloads: list[bytes]) -> pa.Table:
    ids = [bytes([i + 1]) * 32 for i in range(len(lines))]
    return pa.table({
        "source": [SHELL] * len(lines), "kind": ["observation"] * len(lines),
        "subject": subjects, "line": lines, "payload": payloads, "id": ids, "payload_cid": ids,
    })  # fmt: skip


def test_the_screen_withholds_a_row_a_drop_rule_finds_in_its_subject() -> None:
    """Stored before the rule: capture would have dropped it whole, so a reader sees none of
    it (its line is not shown under a withheld subject)."""
    screen = Screen(CONFIG)
    table = _table(["projectx", "other"], ["meeting about launch", "plain"], [b"{}", b"{}"])
    shown = screen.rows(table).to_pylist()
    assert [r["line"] for r in shown] == ["plain"]
    one = screen.event(SHELL, "observation", "projectx", "meeting about launch", b"{}")
    assert one.rule == "projx" and "launch" not in one.line


def test_the_screen_applies_rules_to_payload_keys_stored_before_them() -> None:
    screen = Screen(CONFIG)
    table = _table(
        ["a", "b", "c"], ["k", "h", "p"],
        [b'{"code-1234": 1}', b'{"projectx-plan": 1}', b'{"plain": 1}'],
    )  # fmt: skip
    shown = screen.rows(table).to_pylist()
    assert [r["line"] for r in shown] == ["k", "p"]
    assert b"code-1234" not in shown[0]["payload"] and b"[redacted:code]" in shown[0]["payload"]
    assert shown[0]["id"] != bytes([1]) * 32  # changed: its addresses are keyed
    assert shown[1]["id"] == bytes([3]) * 32


def test_the_screen_changes_an_events_id_when_only_its_subject_is_redacted() -> None:
    """Screen.event says ``changed`` when the subject it shows is not the stored one, so the
    caller keys the id (a stored id beside a redacted subject confirms a guess of it)."""
    one = Screen(CONFIG).event(SHELL, "observation", "code-1234", "edit", b"{}")
    assert one.subject == "[redacted:code]" and one.changed


def test_a_screened_value_hides_what_its_keys_hold() -> None:
    screen = Screen(CONFIG)
    out = json.dumps(screen.value({"code-1234": "x", "deep": [{"projectx": 1}], GHP: 2}))
    assert "code-1234" not in out and "projectx" not in out and GHP not in out
