"""The commands' values (``nerve.commands.Record``): frozen, compared and hashed by their
fields, refusing a missing or unknown field; the socket's junk refused naming the field."""

from __future__ import annotations

import pytest

from nerve.commands import Record
from nerve.commands.daemon import AnswerRun, Override
from nerve.commands.log import Compact, Emit, Pause
from nerve.commands.table import command_of
from nerve.errors import NerveError


def test_a_command_is_a_frozen_value_of_its_fields() -> None:
    command = Override("r1", "why", "me", interactive=True)
    assert command.FIELDS == ("run", "reason", "by", "tty", "interactive")
    assert (command.tty, command.interactive) == (None, True)
    assert command == Override("r1", "why", "me", None, True)
    assert hash(command) == hash(Override("r1", "why", "me", None, True))
    assert command != Override("r1", "why", "me") and command != "r1"
    assert repr(Pause(5)) == "Pause(for_ms=5)"
    with pytest.raises(AttributeError, match="frozen"):
        command.run = "r2"  # type: ignore[misc]


def test_a_missing_or_unknown_field_is_refused() -> None:
    with pytest.raises(TypeError, match="needs field 'choice'"):
        AnswerRun("r1")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes fields"):
        Compact(5, 6)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes fields"):
        Emit((), colour="red")  # type: ignore[call-arg]


def test_each_class_has_its_own_fields() -> None:
    assert Record.FIELDS == () and Emit.FIELDS == ("drafts", "key")


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        ([], None),
        ({"v": "1", "type": "seal"}, "v"),
        ({"type": "workflow-answer", "run": "r", "choice": " "}, "choice"),
        ({"type": "trigger-sense", "sense": 3}, "sense"),
        ({"type": "emit", "events": [{"kind": 5}]}, "events[0]"),
        ({"type": "emit", "events": [], "key": 5}, "key"),
    ],
)
def test_junk_names_its_field(request_: object, field: str | None) -> None:
    with pytest.raises(NerveError) as refused:
        command_of(request_)
    assert refused.value.field == field
