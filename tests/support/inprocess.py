"""Running `lorelab` inside the test process, as if it were a fresh `lorelab` process.

A subprocess costs a CLI test most of a second of interpreter start and imports per command.
Here `bot.cli.main` runs with the `sys.argv`, environment, standard streams and working
directory that process would have had, and its end becomes a `subprocess.CompletedProcess`
the way the interpreter would have ended it: `SystemExit` gives the status (a non-integer one
is printed on stderr, status 1), an uncaught exception goes through `sys.excepthook` (a
traceback on stderr) and gives 1.

What a fresh process would start without is reset before each call, and what the call changed
is put back afterwards, so that neither the test nor the next call sees it:

- the environment (the root callback sets LORELAB_CONFIG for `--config`), the working
  directory, the umask, signal handlers, `sys.excepthook` (typer replaces it), `sys.argv`;
- logging: a process starts with no handler on the root logger and level WARNING (pytest's
  handlers are set aside during the call); every logger's level and handlers are put back;
- `bot.cli.context`: `CONFIG_PATH` (`--config`) and the settings it loaded (`_loaded`: a
  process reads the config file again);
- the rich consoles the CLI modules made at import, which fix their width (COLUMNS), colour
  and terminal detection when they are made, and rich's global console;
- the Celery app's configuration (the globals its `configure` function sets: a process starts
  unconfigured), and the listeners on step events (`LISTENERS` lists);
- every SQLAlchemy engine the call made (disposed: a process would have closed their
  connections when it ended), and module-level caches that kept a `Database` of the call.

It cannot show what only a process shows: being killed by a signal, what child processes write
to inherited file descriptors, a progress display on a real terminal, the exit of a service
loop. Tests of those run `lorelab` in a subprocess (`Lorelab(..., process=True)`).
"""

from __future__ import annotations

import dis
import functools
import io
import logging
import os
import signal
import subprocess
import sys
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

_PACKAGES = ("bot", "workers")
_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM",
                 "SIGCHLD", "SIGPIPE")
    if hasattr(signal, name)
)


def run(args: Sequence[str], env: Mapping[str, str],
        input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """`lorelab ARGS` with environment `env` and standard input `input`, in this process."""
    import bot.cli  # noqa: F401 - imported once, before the call: a process imports it first

    stdout, stderr = io.BytesIO(), io.BytesIO()
    with ExitStack() as stack:
        for state in (_process_state(), _environment(env),
                      _standard_streams(input, stdout, stderr), _cli_context(), _consoles(),
                      _celery_app(), _listeners(), _database_caches(), _engines_disposed()):
            stack.enter_context(state)
        returncode = _call_main(["-c", *args])  # sys.argv of `python -c ... ARGS`
    return subprocess.CompletedProcess(
        ["lorelab", *args], returncode, stdout.getvalue(), stderr.getvalue()
    )


def _call_main(argv: list[str]) -> int:
    from bot.cli import main

    sys.argv = argv
    try:
        main()
        return 0
    except SystemExit as exc:
        return _exit_status(exc.code)
    except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught one
        sys.excepthook(*sys.exc_info())
        return 1


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


class _Stream(io.TextIOWrapper):
    """A standard stream on a pipe: text over a binary `.buffer`, not a terminal.

    Closing it only flushes: what the command wrote stays readable by the test.
    """

    def close(self) -> None:
        if not self.buffer.closed:
            self.flush()


@contextmanager
def _standard_streams(input: bytes | None, stdout: io.BytesIO,
                      stderr: io.BytesIO) -> Iterator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    # As CPython makes them for pipes: stdout block-buffered, stderr line-buffered and never
    # failing on an unencodable character; stdin empty (pytest's is /dev/null) or `input`.
    sys.stdin = io.TextIOWrapper(io.BytesIO(input or b""), encoding="utf-8")
    sys.stdout = out = _Stream(stdout, encoding="utf-8")
    sys.stderr = err = _Stream(stderr, encoding="utf-8", errors="backslashreplace",
                               line_buffering=True)
    try:
        yield
    finally:
        out.flush()  # what the interpreter does at exit
        err.flush()
        sys.stdin, sys.stdout, sys.stderr = saved


def _set_environment(env: Mapping[str, str]) -> None:
    # Only what differs: other threads of the test process (servers, the database helper) may
    # read the environment meanwhile.
    for name in [name for name in os.environ if name not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


@contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    _set_environment(env)
    try:
        yield
    finally:
        _set_environment(saved)


@contextmanager
def _process_state() -> Iterator[None]:
    """The working directory, umask, signals, excepthook, argv and logging of a process."""
    cwd = os.getcwd()
    umask = os.umask(0o022)
    os.umask(umask)
    handlers = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    excepthook, argv = sys.excepthook, sys.argv
    manager = logging.Logger.manager
    loggers = {
        name: (logger.level, list(logger.handlers), logger.propagate, logger.disabled)
        for name, logger in manager.loggerDict.items() if isinstance(logger, logging.Logger)
    }
    root = logging.getLogger()
    root_level, root_handlers = root.level, list(root.handlers)
    disabled = manager.disable
    root.handlers = []
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        os.chdir(cwd)
        os.umask(umask)
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)
        sys.excepthook, sys.argv = excepthook, argv
        root.level, root.handlers = root_level, root_handlers
        for name, logger in manager.loggerDict.items():
            if isinstance(logger, logging.Logger):
                level, saved_handlers, propagate, off = loggers.get(name, (0, [], True, False))
                logger.level, logger.handlers = level, saved_handlers
                logger.propagate, logger.disabled = propagate, off
        logging.disable(disabled)
        manager._clear_cache()


def _our_modules() -> list[types.ModuleType]:
    return [
        module for name, module in list(sys.modules.items())
        if module is not None and name.split(".", 1)[0] in _PACKAGES
    ]


@contextmanager
def _cli_context() -> Iterator[None]:
    """`--config` and the settings read: a process starts without either."""
    from bot.cli import context

    config_path = context.CONFIG_PATH
    loaded = getattr(context, "_loaded", None)
    saved = dict(loaded) if isinstance(loaded, dict) else None
    context.CONFIG_PATH = None
    if isinstance(loaded, dict):
        loaded.clear()
    try:
        yield
    finally:
        context.CONFIG_PATH = config_path
        if isinstance(loaded, dict) and saved is not None:
            loaded.clear()
            loaded.update(saved)


@contextmanager
def _consoles() -> Iterator[None]:
    """New rich consoles, made with this call's environment and streams."""
    import rich
    from rich.console import Console

    from bot.cli import terminal

    replaced: list[tuple[types.ModuleType, str, Console]] = []
    fresh: dict[int, Console] = {}
    for module in _our_modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, Console):
                replacement = fresh.setdefault(
                    id(value), terminal.stderr() if value.stderr else terminal.stdout())
                replaced.append((module, name, value))
                setattr(module, name, replacement)
    global_console = rich._console
    rich._console = None
    try:
        yield
    finally:
        for module, name, value in replaced:
            setattr(module, name, value)
        rich._console = global_console


def _configured_globals() -> dict[tuple[types.ModuleType, str], Any]:
    """The module globals a Celery app's `configure(settings)` sets (its `global` names)."""
    from celery import Celery

    found: dict[tuple[types.ModuleType, str], Any] = {}
    for module in _our_modules():
        configure = vars(module).get("configure")
        if not (isinstance(vars(module).get("app"), Celery)
                and isinstance(configure, types.FunctionType)
                and configure.__module__ == module.__name__):
            continue
        for instruction in dis.get_instructions(configure):
            if instruction.opname == "STORE_GLOBAL":
                found[(module, instruction.argval)] = vars(module).get(instruction.argval)
    return found


@contextmanager
def _celery_app() -> Iterator[None]:
    """A process's Celery app is unconfigured until the command configures it."""
    saved = _configured_globals()
    for module, name in saved:
        setattr(module, name, None)
    try:
        yield
    finally:
        for (module, name), _ in _configured_globals().items():
            setattr(module, name, None)  # a module first imported by the call, as imported
        for (module, name), value in saved.items():
            setattr(module, name, value)
        configured = {module: value for (module, _), value in saved.items() if value is not None}
        for module, value in configured.items():
            module.configure(value)  # the app's conf as the test had it


@contextmanager
def _listeners() -> Iterator[None]:
    """Listeners on step events (`LISTENERS` lists): a process starts with none."""
    lists = [
        (value, list(value)) for module in _our_modules()
        if isinstance(value := vars(module).get("LISTENERS"), list)
    ]
    for listeners, _ in lists:
        listeners.clear()
    try:
        yield
    finally:
        for listeners, saved in lists:
            listeners[:] = saved


def _caches_of_databases() -> list[Any]:
    """Module-level `functools` caches of `Database`s (by return annotation). Caches of pure
    functions are left alone: a process would compute the same."""
    caches = []
    for module in _our_modules():
        for value in list(vars(module).values()):
            if (isinstance(value, functools._lru_cache_wrapper)
                    and value.__module__ == module.__name__
                    and "Database" in str(getattr(value, "__annotations__", {}).get("return"))):
                caches.append(value)
    return caches


@contextmanager
def _database_caches() -> Iterator[None]:
    """A `Database` the call cached is not left behind for the tests (nor for the next call).

    Caches of the test's own are kept: clearing them would only make its pooled connections
    someone else's to close.
    """
    before = {cache: cache.cache_info().misses for cache in _caches_of_databases()}
    try:
        yield
    finally:
        for cache in _caches_of_databases():
            if cache.cache_info().misses != before.get(cache, 0):
                cache.cache_clear()


@contextmanager
def _engines_disposed() -> Iterator[None]:
    """Dispose of every SQLAlchemy engine the call made: a process would have closed them."""
    import sqlalchemy

    made: list[Any] = []
    create: Callable[..., Any] = sqlalchemy.create_engine

    def tracked(*args: Any, **kwargs: Any) -> Any:
        engine = create(*args, **kwargs)
        made.append(engine)
        return engine

    sqlalchemy.create_engine = tracked  # type: ignore[assignment]
    try:
        yield
    finally:
        sqlalchemy.create_engine = create  # type: ignore[assignment]
        for engine in made:
            engine.dispose()
