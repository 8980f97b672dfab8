"""The ``nerve`` command: global options, command groups, and error translation."""

import sys
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click import exceptions as click  # typer carries its own click

from nerve.cli import interrupt
from nerve.cli.state import STATE
from nerve.cli.tree import LazyRoot, load_all, plain_flags, quick_values
from nerve.errors import DISK_ERRNOS, LogError, NerveError, UsageError, os_error_text

EXIT_CODES = (
    "Exit codes: 0 ok · 1 error (the message says which) · 2 usage: a bad flag or value, or no "
    "workspace · 3 daemon not running (status) or no answer (ask) · 10-21 audit verify: the "
    "kind of break · 130 interrupted (Ctrl+C)."
)

app = typer.Typer(
    name="nerve",
    help="An ambient-context daemon over one append-only, content-addressed event log.",
    epilog=EXIT_CODES,
    cls=LazyRoot,  # a command imports its own module only
    rich_markup_mode=None,  # plain help: rich's help renderer costs more than the rest of start-up
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120},
)

WORKSPACE_FLAGS = ("--workspace", "-w")


def _version(value: bool) -> None:
    if value:
        from nerve.version import __version__

        typer.echo(f"nerve {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    workspace: Annotated[
        str | None,  # text: typer's Path converter costs every command ~60 ms of pydantic
        typer.Option(
            *WORKSPACE_FLAGS,
            help="Workspace folder, before or after the command (default: NERVE_WORKSPACE, "
            "else the nearest folder upwards holding nerve.yaml).",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print nerve's version."
        ),
    ] = False,
    no_pager: Annotated[
        bool,
        typer.Option(
            "--no-pager",
            help="Never page long output (the pager: NERVE_PAGER, else PAGER, else less).",
        ),
    ] = False,
) -> None:
    STATE.workspace_arg = None if workspace is None else Path(workspace)
    from nerve.cli.pager import PAGING

    PAGING.off = no_pager  # each run says it anew (tests run many in one process)


def _takes_value(command: Any, flag: str) -> bool | None:
    """Whether ``flag`` is an option of ``command`` that consumes the next word (None: not
    one of its options)."""
    for param in getattr(command, "params", ()):
        if flag in (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ())):
            return not (getattr(param, "is_flag", False) or getattr(param, "count", False))
    return None


def hoist_workspace(command: Any, argv: list[str]) -> list[str]:
    """Move ``--workspace DIR`` (and ``--no-pager``) given after a subcommand to the front,
    where the root option reads it; every other word keeps its place. Walks the real command
    tree so a value that merely looks like the flag (``--line -w``) is left alone."""
    front: list[str] = []
    rest: list[str] = []
    words = iter(argv)
    current, positional = command, False
    for word in words:
        if word == "--":
            rest += [word, *words]
            break
        flag, _, attached = word.partition("=")
        if word == "--no-pager" and _takes_value(current, word) is None:
            front.append(word)
            continue
        if flag in WORKSPACE_FLAGS and _takes_value(current, flag) is None:
            front += [word] if attached or "=" in word else [word, next(words, "")]
            continue
        rest.append(word)
        if word.startswith("-"):
            if not attached and _takes_value(current, flag):
                rest.append(next(words, ""))
        elif not positional and (sub := _child(current, word)) is not None:
            current = sub
        else:
            positional = True
    return [*front, *rest]


def _child(command: Any, word: str) -> Any:
    """The subcommand ``word`` of a group (loading its module), else None."""
    if not hasattr(command, "get_command") or word.startswith("-"):
        return None
    return command.get_command(None, word)


def command(*, lazy: bool = False) -> Any:
    """The ``nerve`` command tree: every group loaded, or (``lazy``) each when first asked for."""
    tree = _root()
    return tree if lazy else load_all(tree)


_ROOTS: list[Any] = []


def _root() -> Any:
    if not _ROOTS:
        tree = typer.main.get_command(app)
        plain_flags(tree)
        quick_values(tree)
        _ROOTS.append(tree)
    return _ROOTS[0]


def fail(exc: NerveError) -> None:
    """``ErrorName: message`` on stderr, the hint below it, exit 1 (2 for usage errors)."""
    from nerve.safetext import shown

    sys.stderr.write(_fitted(shown(f"{type(exc).__name__}: {exc}")) + "\n")  # may quote the log
    if exc.hint:
        sys.stderr.write(_fitted(shown(f"hint: {exc.hint}")) + "\n")
    raise SystemExit(exc.exit_code)


def _fitted(text: str) -> str:
    """``text`` wrapped between words to the width of a terminal on stderr, each line's
    continuation indented under it; whole for a pipe or a file (one line to grep)."""
    from nerve.cli.output import is_terminal, terminal_width

    if not is_terminal(sys.stderr):
        return text
    import textwrap

    width = terminal_width(sys.stderr)
    out = []
    for line in text.splitlines():
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
        out += textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False,
                             break_on_hyphens=False) or [""]  # fmt: skip
    return "\n".join(out)


def _show_warning(
    message: Warning | str, category: type[Warning], *args: object, **kwargs: object
) -> None:
    """Warnings a user should see, as one line: ``warning: message`` (shown safe)."""
    from nerve.safetext import shown

    sys.stderr.write(shown(f"warning: {message}") + "\n")


def run(argv: list[str] | None = None) -> None:
    """The ``nerve`` command: ``argv`` (default: the process's arguments) run, its errors
    translated to one line and an exit code."""
    own = argv is None
    if own:
        interrupt.start()
    try:
        _run(argv)
    except SystemExit as done:
        if done.code == 130:  # typer turns KeyboardInterrupt into Exit(130), silently
            _interrupted(own)
        raise
    except KeyboardInterrupt:
        _interrupted(own)
    except BaseException:
        if not interrupt.seen():
            raise
        _interrupted(own)  # how Ctrl+C landed inside a library (DuckDB: "Query interrupted")


def _interrupted(own: bool) -> None:
    """One line and exit 130; the process's own run ends here, as Ctrl+C asked (nothing
    left is worth the wait: the command's ``finally`` blocks have run)."""
    interrupt.report()
    if own:
        interrupt.leave(130)
    raise SystemExit(130) from None


def _run(argv: list[str] | None) -> None:
    warnings.showwarning = _show_warning
    words = sys.argv[1:] if argv is None else argv
    if words in (["--version"], ["-V"]):  # answered without building the command tree
        from nerve.version import __version__

        sys.stdout.write(f"nerve {__version__}\n")
        return
    if argv is None:  # the process is nerve's own: pyarrow need not probe for pandas (~0.5 s)
        sys.meta_path.insert(0, _NoPandas())
    tree = command(lazy=True)
    args = hoist_workspace(tree, words)
    try:
        code = _invoke(tree, args)
    except click.NoArgsIsHelpError as exc:  # `nerve audit`: the group's help
        sys.stdout.write(exc.format_message() + "\n")
        raise SystemExit(0) from None
    except click.UsageError as exc:
        fail(_usage_error(exc))
    except click.ClickException as exc:
        exc.show()
        raise SystemExit(exc.exit_code) from None
    except typer.Abort:
        sys.stderr.write("aborted\n")
        raise SystemExit(1) from None
    except NerveError as exc:
        fail(exc)
    except BrokenPipeError:
        sys.stderr.close()
        raise SystemExit(0) from None
    except OSError as exc:  # the system said no (disk full, read-only, no permission)
        if exc.errno in DISK_ERRNOS:  # what nerve writes is the log
            fail(LogError(os_error_text(exc), hint="free some space or fix the disk, then retry"))
        sys.stderr.write(f"{type(exc).__name__}: {os_error_text(exc)}\n")
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    raise SystemExit(code if isinstance(code, int) else 0)  # click's Exit(n) comes back as n


class _NoPandas:
    """pandas answered "not installed": no command uses it, but pyarrow imports it the
    first time it builds an array, to see whether it was given a DataFrame (as the daemon
    does, see ``nerve.runtime.daemon.keep_out``)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError("pandas is not loaded by the nerve command", name=name)


def _invoke(tree: Any, args: list[str]) -> Any:
    """The command, its output through the pager if it started one."""
    try:
        return tree(args=args, prog_name="nerve", standalone_mode=False)
    finally:
        if "nerve.cli.pager" in sys.modules:
            sys.modules["nerve.cli.pager"].end_paging()


def _usage_error(exc: click.UsageError) -> UsageError:
    """click's Usage/Try/Error block as one ``UsageError`` line and a hint naming --help."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    path = exc.ctx.command_path if exc.ctx is not None else "nerve"
    return UsageError(message[:1].lower() + message[1:], hint=f"see {path} --help")
