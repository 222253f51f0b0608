"""The one-thread guard of readers, writers and files: their native handles are used by one
thread at a time (docs/spec/c-abi.md §Threads), so a second thread's call is refused with
``RuntimeError`` instead of racing inside the library."""

from __future__ import annotations

from typing import Any, Optional


def _busy_error(obj: Any, name: str) -> RuntimeError:
    kind = type(obj).__name__
    return RuntimeError(
        f"{kind}.{name}: another call is still inside this {kind} (on another thread, or on this "
        f"one from a callback, sink or source the {kind} is calling); a {kind} is used by one call "
        "at a time (give each thread its own, or lock around its use)"
    )


def _guard() -> list:
    """A reader's or writer's one-thread guard: a list holding one token. A call takes it
    (``pop``, atomic: of two threads only one gets it; an ``IndexError`` for the other) and
    puts it back when it returns, cheaper than a non-blocking lock's acquire and release."""
    return [True]


def _one_thread(method: Any, name: Optional[str] = None, keywords: bool = False) -> Any:
    """``method`` refusing a call while another thread is inside a guarded method of the same
    reader, writer or file (their native handle is not for two threads at once):
    ``RuntimeError`` at once, instead of a data race. Guarded methods do not call each other.
    ``keywords``: the method takes keyword arguments (the per-tensor stream calls take none,
    and their guard is the cheaper for it)."""
    name = name or method.__name__

    if keywords:

        def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
            busy = self._busy
            try:
                busy.pop()
            except IndexError:
                raise _busy_error(self, name) from None
            try:
                return method(self, *args, **kwargs)
            finally:
                busy.append(True)

    else:

        def guarded(self: Any, *args: Any) -> Any:  # type: ignore[misc]
            busy = self._busy
            try:
                busy.pop()
            except IndexError:
                raise _busy_error(self, name) from None
            try:
                return method(self, *args)
            finally:
                busy.append(True)

    guarded.__name__, guarded.__doc__ = name, method.__doc__
    guarded.__qualname__ = method.__qualname__.rsplit(".", 1)[0] + "." + name
    guarded.__wrapped__ = method  # type: ignore[attr-defined]
    return guarded
