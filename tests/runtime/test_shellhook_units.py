"""`nerve.shellhook` on its own: where the hook appends, how it quotes a path for each shell,
the version a hook file names, and a spool line's fields at the edges of their ranges."""

from __future__ import annotations

from pathlib import Path

import pytest

from nerve.errors import UsageError
from nerve.shellhook import (
    SpoolLineError,
    default_spool,
    hook,
    hook_file,
    parse_spool_line,
    written_version,
)


def test_the_spool_is_the_env_s_else_under_xdg_state_else_under_home() -> None:
    assert default_spool({"NERVE_SHELL_SPOOL": "/s/x.spool", "XDG_STATE_HOME": "/x"}) == Path(
        "/s/x.spool"
    )
    assert default_spool({"NERVE_SHELL_SPOOL": "", "XDG_STATE_HOME": "/x"}) == Path(
        "/x/nerve/shell.spool"
    )
    assert default_spool({"HOME": "/h"}) == Path("/h/.local/state/nerve/shell.spool")
    assert default_spool({"HOME": "/h", "XDG_STATE_HOME": ""}) == Path(
        "/h/.local/state/nerve/shell.spool"
    )


def test_a_spool_path_is_one_quoted_word_in_each_shell() -> None:
    spool = Path("/tmp/it's\\here")
    assert "'/tmp/it'\\''s\\here'" in hook("bash", spool)
    assert "'/tmp/it'\\''s\\here'" in hook("zsh", spool)
    assert "'/tmp/it\\'s\\\\here'" in hook("fish", spool)


def test_a_hook_file_names_the_version_that_wrote_it() -> None:
    text = hook_file("bash", spool=Path("/s"), nerve=Path("/v/bin/nerve"), version="1.2.3")
    assert written_version(text) == "1.2.3"
    assert "alias nerve='/v/bin/nerve'" in text and "__nerve_spool='/s';" in text
    fish = hook_file("fish", spool=Path("/s"), nerve=Path("/v/it's"), version="1.2.3")
    assert "function nerve; '/v/it\\'s' $argv; end" in fish
    assert written_version("# some other file\n") is None


def _line(**kw: str) -> str:
    fields = {"shell": "bash", "session": "4194304.123", "start": "1000000000",
              "end": "1700000000,5", "status": "255", "cwd": "/a\\tb", "command": "x"}  # fmt: skip
    fields.update(kw)
    return "\t".join(["nerve1", *fields.values()])


def test_a_spool_line_takes_each_field_to_the_edge_of_its_range() -> None:
    record = parse_spool_line(_line(command="a\\tb\\nc\\\\d\\xe"))
    assert (record.start_ns, record.end_ns) == (10**18, 1_700_000_000_500_000_000)
    assert (record.exit, record.session, record.cwd) == (255, "4194304.123", "/a\tb")
    assert record.command == "a\tb\nc\\d\\xe"


@pytest.mark.parametrize(
    ("kw", "field", "says"),
    [({"status": "256"}, "EXIT", "EXIT must be an exit status 0-255, got '256'"),
     ({"session": "4194305.1"}, "SESSION", "SESSION must be PID.SECONDS with a pid up to"),
     ({"start": "999999999"}, "START", "START/END must be Unix times, got '999999999'"),
     ({"end": "4611686018"}, "START", "START/END must be Unix times"),
     ({"shell": "tcsh"}, "SHELL", "SHELL must be one of bash, zsh, fish, got 'tcsh'")],
)  # fmt: skip
def test_a_spool_line_past_a_range_is_refused_naming_the_field(
    kw: dict[str, str], field: str, says: str
) -> None:
    with pytest.raises(SpoolLineError) as refused:
        parse_spool_line(_line(**kw))
    assert refused.value.field == field and says in str(refused.value)


def test_a_shell_without_a_hook_is_a_usage_error_naming_those_with_one() -> None:
    with pytest.raises(
        UsageError, match="no hook for the shell 'tcsh'; there is one for bash, zsh, fish"
    ):
        hook("tcsh")
