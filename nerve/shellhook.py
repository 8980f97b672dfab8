"""The shell hook: a snippet for bash, zsh or fish that records each command as it ends.

``nerve shell-hook bash`` prints it; ``eval "$(nerve shell-hook bash)"`` at the end of
``~/.bashrc`` installs it. When a command ends the hook appends one line to a spool file and
returns: no process of nerve's is reached, so a prompt never waits for the daemon, and with
the daemon down the lines wait in the spool. The ``shell`` sense reads the spool.

A spool line is tab-separated, ``\\n``-terminated, with ``\\``, tab, newline and carriage
return escaped as ``\\\\``, ``\\t``, ``\\n``, ``\\r`` in its text fields::

    nerve1  SHELL  SESSION  START  END  EXIT  CWD  COMMAND

``START`` and ``END`` are Unix times in seconds with a fraction (the shell's
``$EPOCHREALTIME``; a comma is accepted as the decimal mark). The spool is created
owner-only (mode 0600); ``$NERVE_SHELL_SPOOL`` moves it. A command's bytes go to the spool
as they are (bytes that are not UTF-8 included), so they come back exactly.

The hook never hurts the shell: it works with the user's ``set -euo pipefail``, ``set -C``
(zsh: ``err_exit``, ``nounset``, ``pipe_fail``, ``no_clobber``), and after it ``$?``,
``PIPESTATUS`` / ``pipestatus`` and ``$_`` are as the command left them. It starts no process
per prompt in bash and zsh (fish has no clock of its own: one ``date``).

bash needs 5.0 or later (``$EPOCHREALTIME``) and keeps ``PROMPT_COMMAND`` and the ``DEBUG``
trap for itself: source the line last. A command that history does not keep (a leading space
with ``HISTCONTROL=ignorespace``) is not recorded either.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import NamedTuple

from nerve.errors import EventError, UsageError

__all__ = [
    "SHELLS",
    "SPOOL_VERSION",
    "SpoolLineError",
    "SpoolRecord",
    "default_spool",
    "hook",
    "hook_file",
    "install_line",
    "parse_spool_line",
    "written_version",
]

SPOOL_VERSION = "nerve1"
SHELLS = ("bash", "zsh", "fish")

_BASH = r"""# nerve shell hook (bash >= 5): each command, as it ends, becomes one line of a spool.
# It never hurts the shell: its functions turn off the user's set -e, -u, -C and pipefail for
# themselves (`local -`), and $?, PIPESTATUS and $_ are as the command left them.
__nerve_spool="${NERVE_SHELL_SPOOL:-${XDG_STATE_HOME:-$HOME/.local/state}/nerve/shell.spool}"
__nerve_sid="$$.${EPOCHSECONDS:-0}"
# `history 1` goes through a small per-shell file, not $(...): a fork can stall a busy machine
__nerve_tmp=${XDG_RUNTIME_DIR:-/dev/shm}
[ -d "$__nerve_tmp" ] && [ -w "$__nerve_tmp" ] || __nerve_tmp=${TMPDIR:-/tmp}
__nerve_tmp=$__nerve_tmp/nerve-hook.$$
__nerve_armed= __nerve_start= __nerve_bc= __nerve_pwd= __nerve_cwd= __nerve_out=
__nerve_last=$(HISTTIMEFORMAT= builtin history 1)
__nerve_last=${__nerve_last#"${__nerve_last%%[![:space:]]*}"}
__nerve_last=${__nerve_last%%[[:space:]]*}
# called with "$_" as its last word, so $_ is that again once it returns
__nerve_preexec() {
  [ -n "$__nerve_armed" ] && [ "$BASH_COMMAND" != __nerve_precmd ] || return 0
  __nerve_armed= __nerve_start=$EPOCHREALTIME __nerve_bc=$BASH_COMMAND
}
__nerve_esc() {
  local s=${1//\\/\\\\}; s=${s//$'\t'/\\t}; s=${s//$'\n'/\\n}; __nerve_out=${s//$'\r'/\\r}
}
# returns the command's status; PROMPT_COMMAND runs it as `__nerve_precmd "$_" && :`, a
# place set -e ignores, so the next entries of PROMPT_COMMAND see $? unchanged
__nerve_precmd() {
  local st=$? end=$EPOCHREALTIME num= cmd=
  local -
  set +euCo pipefail
  # cheap tests instead of 2>/dev/null: each redirection costs the prompt a dozen syscalls
  [ -w "$__nerve_tmp" ] || (umask 077; : >"$__nerve_tmp") 2>/dev/null
  [ -w "$__nerve_tmp" ] && HISTTIMEFORMAT= builtin history 1 >"$__nerve_tmp"
  # one read splits the number from the command (whole, newlines kept: -d '')
  IFS=$' \t' read -r -d '' num cmd <"$__nerve_tmp"; cmd=${cmd%$'\n'}
  # a new history entry, or the same one again (ignoredups); no DEBUG trap ran (a subshell):
  # no start, so the end stands for it
  local again=
  [ -n "$__nerve_start" ] && [[ $cmd == "$__nerve_bc"* ]] && again=1
  if [ -n "$num" ] && { [ "$num" != "$__nerve_last" ] || [ -n "$again" ]; }; then
    [ -n "$__nerve_start" ] || __nerve_start=$end
    __nerve_last=$num
    __nerve_esc "$cmd"; local c=$__nerve_out
    # the folder is escaped again only when it changed
    [ "$PWD" == "$__nerve_pwd" ] ||
      { __nerve_esc "$PWD"; __nerve_pwd=$PWD __nerve_cwd=$__nerve_out; }
    [ -w "$__nerve_spool" ] ||
      (umask 077; mkdir -p "${__nerve_spool%/*}"; : >>"$__nerve_spool") 2>/dev/null
    [ -w "$__nerve_spool" ] &&
      builtin printf 'nerve1\tbash\t%s\t%s\t%s\t%s\t%s\t%s\n' "$__nerve_sid" \
        "$__nerve_start" "$end" "$st" "$__nerve_cwd" "$c" >>"$__nerve_spool"
  fi
  __nerve_start=
  return $st
}
__nerve_arm() { __nerve_armed=1; }
(umask 077; : >|"$__nerve_tmp")
[ -n "$(trap -p EXIT)" ] || trap 'command rm -f "$__nerve_tmp"' EXIT
# the test inline: the trap runs before every simple command, the prompt's own included;
# [[ ]] leaves $_ alone, and the call hands it back
trap '[[ -z $__nerve_armed ]] || __nerve_preexec "$_"' DEBUG
PROMPT_COMMAND="__nerve_precmd \"\$_\" && :${PROMPT_COMMAND:+;$PROMPT_COMMAND};__nerve_arm \"\$_\""
"""

_ZSH = r"""# nerve shell hook (zsh): each command, as it ends, becomes one line of a spool.
# It never hurts the shell: its functions run with zsh's own options (emulate -L), so the
# user's err_exit, nounset, pipe_fail or no_clobber stay out of them.
zmodload zsh/datetime 2>/dev/null
typeset -g __nerve_spool="${XDG_STATE_HOME:-$HOME/.local/state}/nerve/shell.spool"
[[ -n ${NERVE_SHELL_SPOOL-} ]] && __nerve_spool=$NERVE_SHELL_SPOOL
typeset -g __nerve_sid="$$.${EPOCHSECONDS-0}" __nerve_start= __nerve_cmd=
__nerve_esc() {
  local s=${1//\\/\\\\}; s=${s//$'\t'/\\t}; s=${s//$'\n'/\\n}; REPLY=${s//$'\r'/\\r}
}
__nerve_preexec() { emulate -L zsh; __nerve_cmd=$1 __nerve_start=$EPOCHREALTIME; }
__nerve_precmd() {
  local st=$? end=${EPOCHREALTIME-} c REPLY
  emulate -L zsh
  [[ -n $__nerve_start ]] || return 0
  __nerve_esc "$__nerve_cmd"; c=$REPLY; __nerve_esc "$PWD"
  [[ -e $__nerve_spool ]] ||
    (umask 077; mkdir -p "${__nerve_spool:h}"; : >>"$__nerve_spool") 2>/dev/null
  print -rn -- "nerve1	zsh	$__nerve_sid	$__nerve_start	$end	$st	$REPLY	$c
" 2>/dev/null >>"$__nerve_spool"
  __nerve_start=
  return 0
}
autoload -Uz add-zsh-hook
add-zsh-hook preexec __nerve_preexec
add-zsh-hook precmd __nerve_precmd
"""

_FISH = r"""# nerve shell hook (fish >= 3.1): each command, as it ends, becomes one line of a spool.
if set -q NERVE_SHELL_SPOOL; and test -n "$NERVE_SHELL_SPOOL"
    set -g __nerve_spool $NERVE_SHELL_SPOOL
else if set -q XDG_STATE_HOME; and test -n "$XDG_STATE_HOME"
    set -g __nerve_spool $XDG_STATE_HOME/nerve/shell.spool
else
    set -g __nerve_spool $HOME/.local/state/nerve/shell.spool
end
set -g __nerve_sid $fish_pid.(date +%s)
function __nerve_esc
    string replace -a \\ \\\\ -- $argv[1] | string replace -a \t \\t | string replace -a \r \\r \
        | string join \\n
end
function __nerve_postexec --on-event fish_postexec
    set -l st $status
    test -n "$argv[1]"; or return
    set -l end (date +%s.%N)
    set -l start (math -s6 "$end - $CMD_DURATION / 1000")
    if not test -e $__nerve_spool
        mkdir -p (dirname $__nerve_spool); and touch $__nerve_spool; and chmod 600 $__nerve_spool
    end
    set -l cwd (__nerve_esc $PWD)
    set -l cmd (__nerve_esc "$argv[1]")
    printf 'nerve1\tfish\t%s\t%s\t%s\t%s\t%s\t%s\n' $__nerve_sid $start $end $st "$cwd" "$cmd" \
        >>$__nerve_spool 2>/dev/null
end
"""

_SNIPPETS = {"bash": _BASH, "zsh": _ZSH, "fish": _FISH}
_INSTALL = {
    "bash": ('eval "$(nerve shell-hook bash)"', "~/.bashrc"),
    "zsh": ('eval "$(nerve shell-hook zsh)"', "~/.zshrc"),
    "fish": ("nerve shell-hook fish | source", "~/.config/fish/config.fish"),
}


def _checked(shell: str) -> str:
    if shell not in _SNIPPETS:
        raise UsageError(
            f"no hook for the shell {shell!r}; there is one for {', '.join(SHELLS)}",
            hint="nerve shell-hook bash",
        )
    return shell


_SPOOL_LINES = {
    "bash": '__nerve_spool="${NERVE_SHELL_SPOOL:-${XDG_STATE_HOME:-$HOME/.local/state}/nerve/'
    'shell.spool}"\n',
    "zsh": 'typeset -g __nerve_spool="${XDG_STATE_HOME:-$HOME/.local/state}/nerve/shell.spool"\n',
    "fish": "    set -g __nerve_spool $HOME/.local/state/nerve/shell.spool\n",
}
_SPOOL_FIXED = {
    "bash": '__nerve_spool={q}; [ -z "${{NERVE_SHELL_SPOOL-}}" ] || '
    "__nerve_spool=$NERVE_SHELL_SPOOL\n",
    "zsh": "typeset -g __nerve_spool={q}\n",
    "fish": "    set -g __nerve_spool {q}\n",
}


def _quoted(shell: str, text: str) -> str:
    """``text`` as one single-quoted word of ``shell`` (fish escapes inside its quotes)."""
    if shell == "fish":
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "'" + text.replace("'", "'\\''") + "'"


def hook(shell: str, spool: Path | None = None) -> str:
    """The snippet for ``shell`` (``bash``, ``zsh`` or ``fish``); a ``UsageError`` otherwise.

    ``spool`` fixes where it appends when ``$NERVE_SHELL_SPOOL`` is not set (``nerve setup``
    points it into the user workspace); without it, :func:`default_spool`'s place."""
    text = _SNIPPETS[_checked(shell)]
    if spool is None:
        return text
    line = _SPOOL_FIXED[shell].format(q=_quoted(shell, str(spool)))
    return text.replace(_SPOOL_LINES[shell], line, 1)


_NERVE_AT = {
    "bash": "command -v nerve >/dev/null || alias nerve={q}\n",
    "zsh": "command -v nerve >/dev/null || alias nerve={q}\n",
    "fish": "type -q nerve; or function nerve; {q} $argv; end\n",
}


def hook_file(shell: str, *, spool: Path, nerve: Path, version: str) -> str:
    """The static hook file ``nerve setup`` writes and a start-up file sources: a header
    naming the ``version`` that wrote it, ``nerve`` as a command when it is not on ``PATH``
    (the README's venv install), then :func:`hook` appending to ``spool``. A new shell reads
    it and runs no Python."""
    head = f"# nerve {version} shell hook, written by `nerve setup` (refreshed on upgrade)\n"
    alias = _NERVE_AT[_checked(shell)].format(q=_quoted(shell, str(nerve)))
    return head + alias + hook(shell, spool)


def written_version(text: str) -> str | None:
    """The nerve version a hook file names in its first line, or None."""
    first = text.split("\n", 1)[0]
    match = re.fullmatch(r"# nerve (\S+) shell hook, .*", first)
    return match[1] if match else None


def install_line(shell: str) -> tuple[str, str]:
    """The one line that installs the hook, and the start-up file it goes at the end of."""
    return _INSTALL[_checked(shell)]


def default_spool(environ: Mapping[str, str] | None = None) -> Path:
    """Where the hook appends: ``$NERVE_SHELL_SPOOL``, else under ``$XDG_STATE_HOME``."""
    env = os.environ if environ is None else environ
    if env.get("NERVE_SHELL_SPOOL"):
        return Path(env["NERVE_SHELL_SPOOL"])
    state = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME", "~"), ".local", "state")
    return Path(os.path.expanduser(state)) / "nerve" / "shell.spool"


class SpoolRecord(NamedTuple):
    """One spool line, parsed: times in integer nanoseconds since the Unix epoch."""

    shell: str
    session: str
    start_ns: int
    end_ns: int
    exit: int
    cwd: str
    command: str

    @property
    def duration_ms(self) -> int:
        return max(0, self.end_ns - self.start_ns) // 1_000_000


_ESCAPE = re.compile(r"\\(.)", re.S)
_UNESCAPED = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: _UNESCAPED.get(m[1], m[0]), text)


def _epoch_ns(text: str) -> int:
    value = Decimal(text.replace(",", "."))
    if not value.is_finite() or not 10**9 <= value < 2**62 // 10**9:  # 2001 to 2116
        raise ValueError(f"time {text!r} is out of range")
    return int(value * 10**9)


_SESSION = re.compile(r"([1-9]\d{0,6})\.(\d{1,12})")
_MAX_PID = 4_194_304  # Linux's PID_MAX_LIMIT, above macOS's and the BSDs'


class SpoolLineError(EventError, ValueError):
    """A spool line is not the hook's form; ``field`` names the part at fault. A
    ``ValueError`` too, as ``parse_spool_line`` raised before it had its own class."""


def parse_spool_line(line: str) -> SpoolRecord:
    """A spool line (without its newline) as a record; :class:`SpoolLineError` naming the
    bad field.

    Refused: another version, a field too many or too few (the hook escapes every tab), a
    shell of none of ``SHELLS``, a ``SESSION`` not ``PID.SECONDS`` with a pid in range, times
    not in the log's range, an ``EXIT`` outside 0–255. Bytes that are not UTF-8 arrive as
    ``os.fsdecode`` gives them (surrogate escapes), so ``os.fsencode`` gives them back.
    """
    fields = line.split("\t")
    if len(fields) != 8 or fields[0] != SPOOL_VERSION:
        message = f"not a {SPOOL_VERSION} line of 8 tab-separated fields"
        raise SpoolLineError(message, field="line")
    _, shell, session, start, end, status, cwd, command = fields
    if shell not in SHELLS:
        message = f"SHELL must be one of {', '.join(SHELLS)}, got {shell!r}"
        raise SpoolLineError(message, field="SHELL")
    pid = _SESSION.fullmatch(session)
    if pid is None or int(pid[1]) > _MAX_PID:
        message = f"SESSION must be PID.SECONDS with a pid up to {_MAX_PID}, got {session!r}"
        raise SpoolLineError(message, field="SESSION")
    try:
        start_ns, end_ns = _epoch_ns(start), _epoch_ns(end)
    except (InvalidOperation, ValueError):
        message = f"START/END must be Unix times, got {start!r} and {end!r}"
        raise SpoolLineError(message, field="START") from None
    if not re.fullmatch(r"\d{1,3}", status) or int(status) > 255:
        raise SpoolLineError(f"EXIT must be an exit status 0-255, got {status!r}", field="EXIT")
    return SpoolRecord(
        shell, session, start_ns, end_ns, int(status), _unescape(cwd), _unescape(command)
    )
