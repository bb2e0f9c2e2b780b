"""The ``chunkmark`` command-line app.

Every way it can fail ends in a short message on stderr, never a traceback: a usage mistake
(unknown command or option, missing or bad value) is one ``error: ...`` line naming the
nearest valid spelling plus a pointer at ``--help`` (exit status 2); a ChunkmarkError is one
line with its fix (exit status 2); anything unexpected is one line naming a log file that holds
the traceback (exit status 1).
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import typer
from typer.core import TyperArgument, TyperGroup

from chunkmark.crash import crash_report, log_dir, scrub_secrets, write_log
from chunkmark.errors import ChunkmarkError
from chunkmark.retry import scrub
from chunkmark.threads import passive_openmp

USAGE_EXIT = 2
UNEXPECTED_EXIT = 1
INTERRUPTED_EXIT = 130

# ``chunkmark --help`` lists the commands in these panels, in this order.
PANELS: dict[str, tuple[str, ...]] = {
    "Evaluate": ("run", "plan", "tune", "compare", "gate", "report", "suite", "audit", "export"),
    "Data": ("datasets", "label", "synth", "relations"),
    "Components": (
        "chunkers",
        "embedders",
        "retrieval",
        "llms",
        "extractors",
        "metrics",
        "chunk",
    ),
    "Maintenance": ("cache",),
    "Agents": ("mcp",),
}
_ORDER = [name for names in PANELS.values() for name in names]


class _Commands(TyperGroup):
    """The root group: commands in the order of :data:`PANELS` (typer lists sub-groups after
    commands otherwise), every help text reflowed to the terminal's width."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _reflow(self)

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: _ORDER.index(n) if n in _ORDER else len(_ORDER))


def _reflow(command: Any) -> None:
    """Each paragraph of every help text below ``command`` on one line (see
    :func:`chunkmark.cli.options.help_text`), so the terminal wraps it, not the source; an
    option's help is escaped, so that rich prints its ``[default: ...]`` instead of reading it
    as a style. Every parameter is named as :func:`_name_value` says."""
    from rich.markup import escape

    from chunkmark.cli.options import help_text

    if isinstance(command.help, str):
        command.help = help_text(command.help)
    import click

    helper = command.get_help_option(click.Context(command))  # made once, then kept
    for param in [*command.params, *([helper] if helper is not None else [])]:
        if getattr(param, "_reflowed", False):
            continue
        if isinstance(getattr(param, "help", None), str):
            param.help = escape(help_text(param.help))
        _name_value(param)
        param._reflowed = True
    for sub in getattr(command, "commands", {}).values():
        _reflow(sub)


class _Argument(TyperArgument):
    """An argument whose type column reads like the options' (``PATH``, not ``<path>``)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return _value_word(self)


def _name_value(param: Any) -> None:
    """Name what ``param`` takes the way click does, one way everywhere: an argument by its
    name in capitals (``SRC``, ``RUNS``, ``EXPERIMENT``; the usage line adds the brackets and
    ``...``), an option's value by its type (``TEXT``, ``INTEGER``, ``FLOAT``, ``PATH``,
    ``[a|b]``) unless it names its own, and a flag by nothing (typer writes ``<bool>``,
    ``<list[str]>``)."""
    if isinstance(param, TyperArgument):
        name = str(param.metavar or param.name or "").strip("[]{}")
        param.metavar = name.removesuffix("...").strip("[]").upper()
        param.__class__ = _Argument
    elif getattr(param, "is_flag", False) or getattr(param, "count", False):
        param.metavar = ""
    elif param.metavar is None:
        param.metavar = _value_word(param)


_WORDS = {str: "TEXT", int: "INTEGER", float: "FLOAT", bool: "BOOLEAN", Path: "PATH"}


def _value_word(param: Any) -> str:
    """``TEXT``, ``INTEGER``, ``FLOAT``, ``PATH`` or ``[a|b]`` for what ``param`` takes (the
    element type of a repeatable one: its help says it repeats)."""
    from typing import get_args, get_origin

    described = param.type_descriptor
    if described.is_choice:
        return "[" + "|".join(str(getattr(c, "value", c)) for c in described.choices or ()) + "]"
    annotation = described.annotation
    if get_origin(annotation) in (list, tuple) and get_args(annotation):
        annotation = get_args(annotation)[0]
    return _WORDS.get(annotation, "TEXT")


app = typer.Typer(
    name="chunkmark",
    cls=_Commands,
    help="Which chunking strategy and embedding model retrieve the text your questions need.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from chunkmark.version import __version__

        typer.echo(f"chunkmark {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """Which chunking strategy and embedding model retrieve the text your questions need."""


def main() -> None:
    """Entry point: run the app and turn every failure into a short message and exit status."""
    passive_openmp()  # before any model loads torch (chunkmark.threads)
    try:
        _register_commands(_named_command(sys.argv[1:]))
        code = app(standalone_mode=False)
    except ChunkmarkError as exc:  # a command may give its errors their own status (gate)
        _exit_with([f"error: {_one_line(str(exc))}"], getattr(exc, "exit_code", USAGE_EXIT))
    except typer.Abort:
        _exit_with(["aborted"], INTERRUPTED_EXIT)
    except KeyboardInterrupt:
        _exit_with(["interrupted; finished cells are kept on disk"], INTERRUPTED_EXIT)
    except Exception as exc:
        if _is_usage_error(exc):
            _usage_exit(exc)
        _unexpected_exit(exc)
    if code == INTERRUPTED_EXIT:  # typer turns Ctrl-C inside a command into exit status 130
        typer.echo("interrupted; finished cells are kept on disk", err=True)
    sys.exit(code if isinstance(code, int) else 0)


# The module of ``chunkmark.cli`` that registers each top-level command or group. A command
# line that names one of them imports only that module (a warm ``chunkmark run`` should not pay
# for importing every other command); anything else (``--help``, a typo) registers them all.
_HOMES: dict[str, str] = {
    "run": "run",
    "plan": "plan",
    "tune": "tune",
    "compare": "compare",
    "gate": "gate",
    "report": "report",
    "suite": "suite",
    "audit": "audit",
    "export": "audit",
    "datasets": "datasets",
    "label": "label",
    "synth": "synth",
    "relations": "relations",
    "chunkers": "chunkers",
    "chunk": "chunkers",
    "embedders": "listing",
    "retrieval": "listing",
    "llms": "listing",
    "extractors": "listing",
    "metrics": "listing",
    "cache": "cache",
    "mcp": "mcp_command",
}
_registered: set[str] = set()


def _register_commands(names: Sequence[str] | None = None) -> None:
    """Attach the modules that register the commands ``names`` to ``app`` (every command
    group when None), each module once."""
    import importlib

    homes = dict.fromkeys(_HOMES.values()) if names is None else {_HOMES[n]: None for n in names}
    for home in homes:
        if home in _registered:
            continue
        _registered.add(home)
        module = importlib.import_module(f"chunkmark.cli.{home}")
        group = module.register(app)
        if home == "relations":  # its run commands live in their own module
            from chunkmark.cli import relations_run

            relations_run.add_commands(group)
    panel = {name: title for title, names in PANELS.items() for name in names}
    for command in app.registered_commands:
        command.rich_help_panel = panel[str(command.name)]
    for each in app.registered_groups:
        each.rich_help_panel = panel[str(each.name)]


def _named_command(argv: Sequence[str]) -> list[str] | None:
    """The top-level command ``argv`` names, as a list for :func:`_register_commands`; None
    (register every command) when it names none or one chunkmark does not have, and no command
    at all for ``--version``."""
    for arg in argv:
        if arg in ("--help", "-h"):  # the root's help lists every command
            return None
        if arg == "--version":  # answered before any command is read
            return []
        if not arg.startswith("-"):
            return [arg] if arg in _HOMES else None
    return None


def _exit_with(lines: Sequence[str], code: int) -> NoReturn:
    """Print ``lines`` on stderr and exit with status ``code``."""
    for line in lines:
        typer.echo(line, err=True)
    sys.exit(code)


# --- usage errors -------------------------------------------------------------------------


def _is_usage_error(exc: Exception) -> bool:
    """Whether ``exc`` is the command-line parser's own error (a typo, a missing value...).

    Recent typer versions raise their own ``TyperException`` classes; older ones raise
    click's ``ClickException`` (click is then already imported).
    """
    kinds: list[type] = []
    typer_base = getattr(typer, "TyperException", None)
    if isinstance(typer_base, type):
        kinds.append(typer_base)
    click = sys.modules.get("click")
    click_base = getattr(click, "ClickException", None)
    if isinstance(click_base, type):
        kinds.append(click_base)
    return isinstance(exc, tuple(kinds))


def _usage_exit(exc: Exception) -> NoReturn:
    """Report a usage error: help text for a bare group, else one line plus a ``--help`` hint."""
    if type(exc).__name__ == "NoArgsIsHelpError":  # a group run without a command: its help
        help_text = str(exc).strip()  # empty when rich has printed the help already
        if help_text:
            typer.echo(help_text, err=True)
        sys.exit(USAGE_EXIT)
    path = getattr(_context_of(exc), "command_path", None) or "chunkmark"
    _exit_with([f"error: {usage_message(exc)}", f"Run '{path} --help' for usage."], USAGE_EXIT)


def _context_of(exc: Exception) -> Any:
    """The parser context of the command ``exc`` is about: its own, else the innermost one
    on its traceback (some parser errors are raised without one), else None."""
    ctx = getattr(exc, "ctx", None)
    tb = None if ctx is not None else exc.__traceback__
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("ctx")
        if hasattr(candidate, "command_path"):
            ctx = candidate
        tb = tb.tb_next
    return ctx


def usage_message(exc: Exception) -> str:
    """One line for a command-line parser error, with the nearest valid spelling if any."""
    ctx = _context_of(exc)
    if type(exc).__name__ == "NoSuchOption":
        option = str(getattr(exc, "option_name", ""))
        known = list(getattr(exc, "possibilities", None) or []) or _option_names(ctx)
        return f"no such option {option}.{_did_you_mean(option, known)}"
    formatted = getattr(exc, "format_message", None)
    message = _one_line(str(formatted() if callable(formatted) else exc))
    command = re.match(r"No such command (['\"])(.*)\1\.", message)
    if command:
        name = command.group(2)
        return f"no such command {name!r}.{_did_you_mean(name, _command_names(ctx), quote=True)}"
    needs = re.match(r"Option '(.+)' requires (an argument|(\d+) arguments)\.$", message)
    if needs:
        values = f"{needs.group(3)} values" if needs.group(3) else "a value"
        return f"option {needs.group(1)} needs {values}."
    return _lower_first(message)


def _did_you_mean(word: str, candidates: Sequence[str], *, quote: bool = False) -> str:
    """`` Did you mean X?`` naming the closest candidates, or "" when none is close."""
    matches = difflib.get_close_matches(word, sorted(set(candidates)), n=3, cutoff=0.6)
    if not matches:
        return ""
    names = [repr(m) if quote else m for m in matches]
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return f" Did you mean {listed}?"


def _option_names(ctx: Any) -> list[str]:
    """Every option spelling the context's command accepts, help included."""
    if ctx is None:
        return []
    names = list(getattr(ctx, "help_option_names", []))
    for param in getattr(ctx.command, "params", []):
        if getattr(param, "param_type_name", "") == "option":
            names += [*param.opts, *param.secondary_opts]
    return names


def _command_names(ctx: Any) -> list[str]:
    """The subcommand names of the context's command (a group), else none."""
    lister = getattr(getattr(ctx, "command", None), "list_commands", None)
    return list(lister(ctx)) if callable(lister) else []


def _one_line(text: str) -> str:
    """``text`` with its lines joined by spaces."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _lower_first(text: str) -> str:
    """``text`` with its first letter lower-case, unless it starts an acronym."""
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text


# --- unexpected errors --------------------------------------------------------------------


def _unexpected_exit(exc: Exception) -> NoReturn:
    """Report a bug: one line on stderr, the traceback in a log file (or on stderr if the log
    cannot be written), exit status 1."""
    name = type(exc).__name__
    detail = scrub(scrub_secrets(str(exc))).rstrip(".")
    summary = f"error: unexpected {name}: {detail}." if detail else f"error: unexpected {name}."
    report = crash_report(exc, sys.argv)
    try:
        path = write_log(report)
    except OSError as log_exc:
        reason = log_exc.strerror or type(log_exc).__name__
        typer.echo(report, err=True)
        _exit_with(
            [
                f"{summary} The traceback above could not be saved in {log_dir()} ({reason}); "
                "please include it when you report this."
            ],
            UNEXPECTED_EXIT,
        )
    _exit_with(
        [f"{summary} The traceback is in {path}; please include it when you report this."],
        UNEXPECTED_EXIT,
    )
