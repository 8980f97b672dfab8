"""A real interactive bash, zsh or fish on a pseudo-terminal, with the shell hook sourced
from its start-up file as a person installs it; lines are typed one prompt at a time."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import selectors
import signal
import time
from pathlib import Path

from nerve.shellhook import hook

# each prompt shows a counter, so a prompt drawn again while typing is not taken for a new one
_SETUP = {
    "bash": "__t=0; PS1='<P$((__t+=1))>'; PS2=''\nsource {hook}\n",
    "zsh": "unsetopt zle; setopt prompt_subst; __t=0; PS1='<P$((__t+=1))>'; PS2=''\n"
    "source {hook}\n",
    "fish": "set -g __t 0\n"
    "function __tick --on-event fish_prompt; set -g __t (math $__t + 1); end\n"
    'function fish_prompt; echo -n "<P$__t>"; end\n'
    "bind \\cv 'commandline -i \\t'\nbind \\cx 'commandline -i \\Xe9\\ \\Xff'\nsource {hook}\n",
}


class Shell:
    """``shell`` started interactive on a pty in ``tmp``; the hook writes to ``spool``."""

    def __init__(
        self,
        shell: str,
        tmp: Path,
        spool: Path | None,
        *,
        startup: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """``startup``: source that file (a person's ~/.bashrc) instead of the hook itself;
        ``env``: variables over the shell's own (``spool`` None: no NERVE_SHELL_SPOOL)."""
        rc = tmp / f"rc.{shell}"
        sourced = startup or tmp / f"hook.{shell}"
        if startup is None:
            sourced.write_text(hook(shell))
        rc.write_text(_SETUP[shell].replace("{hook}", str(sourced)))
        if shell == "zsh":  # zsh reads $ZDOTDIR/.zshrc
            (tmp / ".zshrc").write_text(rc.read_text())
        argv = {
            "bash": ["bash", "--noprofile", "--rcfile", str(rc), "-i"],
            "zsh": ["zsh", "-i"],
            "fish": ["fish", "--no-config", "-i", "-C", f"source {rc}"],
        }[shell]
        environ = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp),
            "ZDOTDIR": str(tmp),
            "XDG_CONFIG_HOME": str(tmp / "config"),
            "XDG_DATA_HOME": str(tmp / "data"),
            "HISTFILE": str(tmp / f"hist-{shell}"),
            "NERVE_SHELL_SPOOL": str(spool or ""),
            "TERM": "dumb",
            # bash's readline keeps a byte that is not UTF-8 as it is only in the C locale
            "LC_ALL": "C" if shell == "bash" else "C.UTF-8",
            **(env or {}),
        }
        if spool is None:
            del environ["NERVE_SHELL_SPOOL"]
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become the shell
            os.chdir(tmp)
            os.execvpe(argv[0], argv, environ)
        self.output, self.prompts = b"", 0
        self._wait_prompt()

    def type(self, line: bytes | str) -> str:
        """Type ``line`` and Enter; what the terminal showed until the next prompt."""
        start = len(self.output)
        data = line.encode() if isinstance(line, str) else line
        os.write(self.fd, data.replace(b"\n", b"\r") + b"\r")
        self._wait_prompt()
        return self.output[start:].decode("utf-8", "replace")

    def _wait_prompt(self, timeout: float = 30) -> None:
        want = f"<P{self.prompts + 1}>".encode()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.fd, selectors.EVENT_READ)
            while want not in self.output:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise AssertionError(f"no prompt {want!r}; the terminal showed {self.output!r}")
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # EIO: the shell closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"the shell closed after {self.output[-400:]!r}")
                self.output += chunk
        self.prompts += 1

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def shown(pattern: str, text: str) -> str:
    """The one group of ``pattern`` in what a command printed (the typed line never matches)."""
    found = re.findall(pattern, text)
    assert len(found) == 1, (pattern, text)
    return str(found[0])
