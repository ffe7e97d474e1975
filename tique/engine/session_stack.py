"""Where an embedded session's kernel calls run: on a stack of the session's own (tique/udf/session_stack.c),
entered from the calling thread, or, where that module cannot be built, on a worker thread (worker.py).

The kernel refuses a statement whose stack is far from the one the session was opened on. A private stack per
session satisfies it from any thread with no thread switch: a kernel call through a worker costs two thread
wake-ups (SELECT 1 took 0.25-0.34 ms through a worker against 0.11-0.17 ms inline in the same process), and a
TPC-C NewOrder 13-14% more time (one and four clients, interleaved).
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections.abc import Callable
from typing import Any, Protocol

from tique.engine.worker import Worker, give_back, take_worker

# Four times a thread's 8 MB, though only the pages a call touches take memory: MonetDB checks the stack depth
# not on every recursive path, and a 50,000-term expression overflowed 8 MB (tests/test_session_stack.py).
STACK_BYTES = 32 << 20
_lock = threading.Lock()
_module: ctypes.CDLL | None = None
_unavailable: str | None = None


class KernelCalls(Protocol):
    """Runs a session's Python code that makes kernel calls (``around``) and the libmonetdbe calls themselves
    (``c``: the function's name and its arguments, cffi objects or ints; the result as an int, a pointer's address
    or an int result sign-extended from its 32 bits)."""

    def around(self, fn: Callable[[], Any]) -> Any: ...

    def c(self, name: str, *args: Any, held: bool = False) -> int: ...

    def close(self) -> None: ...


def _load() -> ctypes.CDLL | None:
    global _module, _unavailable
    with _lock:
        if _module is None and _unavailable is None:
            from tique.engine import udf

            try:
                path = udf.build(source=udf.SESSION_STACK_SOURCE, packaged=udf.SESSION_STACK_LIBRARY)
                lib = ctypes.CDLL(str(path))
            except Exception as exc:  # no compiler, an unwritable cache: worker threads still work
                _unavailable = str(exc)
                return None
            lib.tq_session_stack_new.restype = ctypes.c_void_p
            lib.tq_session_stack_new.argtypes = [ctypes.c_size_t]
            lib.tq_session_stack_call.restype = ctypes.c_ssize_t
            lib.tq_session_stack_call.argtypes = [ctypes.c_void_p] * 6
            lib.tq_session_stack_free.restype = None
            lib.tq_session_stack_free.argtypes = [ctypes.c_void_p]
            lib.tq_session_stack_recorded.restype = ctypes.c_size_t
            lib.tq_session_stack_init.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            record = _thread_record()
            if record is None:
                _unavailable = "this kernel's thread records are not the ones tique knows"
                return None
            lib.tq_session_stack_init(*record)
            _module = lib
        return _module


class OnSessionStack:
    """Python runs on the calling thread; each C call runs on the session's stack (ctypes releases the GIL)."""

    def __init__(self, module: ctypes.CDLL) -> None:
        self._module = module
        self._held = _held_call(module)
        self._stack = module.tq_session_stack_new(STACK_BYTES)
        if not self._stack:
            raise MemoryError("cannot map a stack for an embedded session")

    def around(self, fn: Callable[[], Any]) -> Any:
        return fn()

    def c(self, name: str, *args: Any, held: bool = False) -> int:
        """The call; ``held``: keeping the GIL, for one that returns at once (another client thread would take the
        GIL meanwhile, and this one wait to take it back)."""
        ffi, _ = lowlevel()
        raw = [a if a is None or isinstance(a, (int, bytes)) else int(ffi.cast("uintptr_t", a)) for a in args]
        raw += [None] * (4 - len(raw))
        call = self._held if held else self._module.tq_session_stack_call
        return int(call(self._stack, _address(name), *raw))

    def close(self) -> None:
        stack, self._stack = self._stack, None
        if stack:
            self._module.tq_session_stack_free(stack)


class OnWorker:
    """Everything runs on a worker thread that never ends (the kernel then sees one stack per session)."""

    def __init__(self) -> None:
        self._worker: Worker | None = take_worker()

    def around(self, fn: Callable[[], Any]) -> Any:
        assert self._worker is not None
        return self._worker.call(fn)

    def c(self, name: str, *args: Any, held: bool = False) -> int:
        ffi, lib = lowlevel()
        result = getattr(lib, name)(*args)
        return result if isinstance(result, int) else int(ffi.cast("intptr_t", result))

    def close(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            give_back(worker)


@functools.cache
def _held_call(module: ctypes.CDLL) -> Any:
    """tq_session_stack_call through ctypes.PyDLL, which keeps the GIL for the call."""
    call = ctypes.PyDLL(module._name).tq_session_stack_call
    call.restype = ctypes.c_ssize_t
    call.argtypes = [ctypes.c_void_p] * 6
    return call


_addresses: dict[str, int] = {}


def _address(name: str) -> int:
    address = _addresses.get(name)
    if address is None:
        ffi, lib = lowlevel()
        address = _addresses[name] = int(ffi.cast("uintptr_t", ffi.addressof(lib, name)))
    return address


@functools.cache
def lowlevel() -> tuple[Any, Any]:
    """The monetdbe wheel's compiled cffi module (ffi, lib); imported on first use (it loads the kernel)."""
    from monetdbe._lowlevel import ffi, lib

    return ffi, lib


def as_int32(value: int) -> int:
    """An int result of a C call, from the pointer-sized register it came back in."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


# The start of THRhighwater in the monetdbe 0.11 wheel's libbat (MonetDB 11.41): it takes the thread's record
# from MT_thread_getdata and reads the recorded stack pointer at offset 0x48 ("mov 0x48(%rax),%rcx"). The
# offset is only trusted where these bytes are found (the call's target, bytes 5-8, may differ).
_HIGHWATER_HEAD = bytes.fromhex("4883ec18e8000000004531c04885c07429488b4848")
_SP_OFFSET = 0x48


def _thread_record() -> tuple[int, int] | None:
    """(address of MT_thread_getdata, offset of the stack pointer in a thread record), when this kernel's
    THRhighwater is the one described above; otherwise None (sessions then use worker threads)."""
    from tique.engine import udf

    try:
        libbat = udf.libbat()
        highwater = ctypes.cast(libbat.THRhighwater, ctypes.c_void_p).value
        getdata = ctypes.cast(libbat.MT_thread_getdata, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None
    if not highwater or not getdata:
        return None
    head = bytearray(ctypes.string_at(highwater, len(_HIGHWATER_HEAD)))
    head[5:9] = b"\0\0\0\0"
    return (getdata, _SP_OFFSET) if bytes(head) == _HIGHWATER_HEAD else None


def kernel_calls() -> KernelCalls:
    """How a new session makes its kernel calls. TIQUE_SESSION_STACKS=0 in the environment chooses worker threads
    (the way before session stacks; for comparison, or as a way out should a kernel disagree with them)."""
    if os.environ.get("TIQUE_SESSION_STACKS", "1") == "0":
        return OnWorker()
    module = _load()
    return OnSessionStack(module) if module is not None else OnWorker()
