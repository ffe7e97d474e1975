"""Build and load tique's C module (tique/udf/tique_udf.c, shipped as package data) into this process's
MonetDB kernel.

The module registers itself with MAL from a library constructor, so it must be loaded after libmonetdb5 (with
RTLD_GLOBAL, for its symbols) and before the first database is opened in the process.

It is compiled on first use with the system C compiler: in a source checkout into the package's ``_lib`` folder
(as ``make build`` does); for an installed package (a wheel, ``pip install .``), or when ``_lib`` cannot be
written, into the user's cache directory (``$XDG_CACHE_HOME/tique/<version>/``, by default
``~/.cache/tique/<version>/``) under a name that changes with the source, so site-packages is never written.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tique.engine.local_calls import LocalCalls
from tique.errors import OperationalError

ABI = 16  # must match TIQUE_UDF_ABI in tique/udf/tique_udf.c
SUPPORTED_KERNEL = "11.41"  # the structure layouts declared in the C source are this kernel's

PACKAGE_DIR = Path(__file__).resolve().parent.parent
SOURCE = PACKAGE_DIR / "udf" / "tique_udf.c"
LIBRARY = PACKAGE_DIR / "_lib" / "tique_udf.so"

_lock = threading.Lock()
_loaded = False
_module: ctypes.CDLL | None = None  # the loaded module, for the calls made from C (watch_storage)


def monetdbe_libdir() -> Path:
    import monetdbe._lowlevel as lowlevel  # loads the bundled kernel libraries

    return Path(lowlevel.__file__).resolve().parent.parent / "monetdbe.libs"


@functools.cache
def libbat() -> ctypes.CDLL:
    """The bundled kernel's GDK library, for the few of its functions tique calls directly."""
    names = glob.glob(str(monetdbe_libdir() / "libbat-*.so*"))
    if not names:
        raise OSError(f"no libbat in {monetdbe_libdir()}; reinstall the monetdbe wheel: pip install monetdbe==0.11")
    return ctypes.CDLL(names[0])


@functools.cache
def held_fetch() -> Any:
    """monetdbe_result_fetch called with the GIL held (through ctypes.PyDLL; cffi releases it at every call). It
    only hands over a column already computed: releasing the GIL for it made the calling thread wait to take it
    back from another client thread, 8% of the client threads' time in a 4-client TPC-C run."""
    names = glob.glob(str(monetdbe_libdir() / "libmonetdbe-*.so*"))
    if not names:
        raise OSError(
            f"no libmonetdbe in {monetdbe_libdir()}; reinstall the monetdbe wheel: pip install monetdbe==0.11"
        )
    fetch = ctypes.PyDLL(names[0]).monetdbe_result_fetch
    fetch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    fetch.restype = ctypes.c_void_p  # the error message, or NULL
    return fetch


def kernel_version() -> str:
    """The SQL kernel version of the bundled MonetDB, read from its library's file name (e.g. 11.41.14)."""
    names = glob.glob(str(monetdbe_libdir() / "libmonetdbsql-*.so.*"))
    if not names:
        raise OperationalError(
            "cannot find libmonetdbsql in the monetdbe wheel; reinstall it: pip install monetdbe==0.11"
        )
    return names[0].rsplit(".so.", 1)[1]


def cache_dir() -> Path:
    from tique import __version__

    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tique" / __version__


def _writable(directory: Path) -> bool:
    target = directory if directory.exists() else directory.parent
    return os.access(target, os.W_OK | os.X_OK)


def _source_checkout() -> bool:
    return (PACKAGE_DIR.parent / "pyproject.toml").is_file()


def library_path(source: Path | None = None, packaged: Path | None = None) -> Path:
    """Where the compiled module (or ``source``, packaged as ``packaged``) lives: the package's ``_lib`` when it
    holds an up-to-date build or the package is a (writable) source checkout, else the user cache."""
    source, packaged = source or SOURCE, packaged or LIBRARY
    if packaged.exists() and (not source.exists() or packaged.stat().st_mtime >= source.stat().st_mtime):
        return packaged
    if _source_checkout() and _writable(packaged.parent):
        return packaged
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12] if source.exists() else "nosource"
    return cache_dir() / f"{packaged.stem}-{digest}.so"


def build(force: bool = False, source: Path | None = None, packaged: Path | None = None) -> Path:
    """Compile the module (or another of tique's C sources) with the system C compiler if it is missing or
    older than its source."""
    source, packaged = source or SOURCE, packaged or LIBRARY
    library = library_path(source, packaged)
    fresh = library.exists() and (not source.exists() or library.stat().st_mtime >= source.stat().st_mtime)
    if fresh and not force:
        return library
    if not source.exists():
        raise OperationalError(
            f"tique's C module is not built and its source {source} is missing; reinstall tique "
            "(pip install --force-reinstall tique), or connect with sequencer='sql', which needs no module"
        )
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not compiler:
        raise OperationalError(
            "tique compiles its engine module on first use and found no C compiler (looked for $CC, cc, gcc, "
            "clang): install one (e.g. 'apt-get install gcc', 'dnf install gcc', 'xcode-select --install'), "
            "or connect with sequencer='sql', which needs no module"
        )
    try:
        library.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OperationalError(
            f"cannot create {library.parent} for tique's compiled engine module: {exc}; set XDG_CACHE_HOME to a "
            "writable directory"
        ) from None
    tmp = library.with_suffix(f".{os.getpid()}.tmp")
    cmd = [compiler, "-O2", "-Wall", "-fPIC", "-shared", "-pthread", "-o", str(tmp), str(source), "-ldl"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as exc:
        raise OperationalError(f"cannot run the C compiler {compiler}: {exc}") from None
    if proc.returncode != 0:
        raise OperationalError(f"building tique's C module failed ({' '.join(cmd)}):\n{proc.stderr}")
    os.replace(tmp, library)  # atomic: processes building at once each install a complete library
    return library


def load() -> None:
    """Load the module into this process once, checking the kernel version first."""
    global _loaded, _module
    with _lock:
        if _loaded:
            return
        version = kernel_version()
        if not version.startswith(SUPPORTED_KERNEL + "."):
            raise OperationalError(
                f"tique's C module is declared for MonetDB {SUPPORTED_KERNEL}, but the embedded kernel is {version}; "
                "install monetdbe==0.11, or use sequencer='sql' which needs no module"
            )
        libmonetdb5 = glob.glob(str(monetdbe_libdir() / "libmonetdb5-*.so*"))
        if not libmonetdb5:
            raise OperationalError(
                "cannot find libmonetdb5 in the monetdbe wheel; reinstall it: pip install monetdbe==0.11"
            )
        ctypes.CDLL(libmonetdb5[0], mode=ctypes.RTLD_GLOBAL)
        _module = ctypes.CDLL(str(build()), mode=ctypes.RTLD_GLOBAL)
        _loaded = True


def watch_storage(directory: str, min_free_bytes: int) -> None:
    """Make the module refuse commits (SQLSTATE 53100) while ``directory``'s file system has less than
    ``min_free_bytes`` free; called by the process that opened the kernel on that directory."""
    if _module is None:
        return
    _module.tique_watch_storage(os.fsencode(directory), ctypes.c_int64(min_free_bytes))


def is_loaded() -> bool:
    return _loaded


def local_calls() -> LocalCalls | None:
    """The sequencer calls this process may make without a statement (None: the module is not loaded here, or
    was built before it had them: the statements still work)."""
    if _module is None or not hasattr(_module, "tique_begin_local"):
        return None
    return LocalCalls(_module)


SESSION_STACK_SOURCE = PACKAGE_DIR / "udf" / "session_stack.c"
SESSION_STACK_LIBRARY = PACKAGE_DIR / "_lib" / "session_stack.so"
MAX_CLIENTS_SOURCE = PACKAGE_DIR / "udf" / "max_clients.c"
MAX_CLIENTS_LIBRARY = PACKAGE_DIR / "_lib" / "max_clients.so"
KERNEL_MAX_CLIENTS = 64  # the embedded kernel's default number of client sessions
_max_clients: ctypes.CDLL | None = None


def set_max_clients(sessions: int) -> None:
    """Make the kernel this process is about to start admit ``sessions`` client sessions instead of 64: monetdbe
    offers no option for it, so tique/udf/max_clients.c stands in for the kernel's GDKinit and adds the option.
    It must be loaded before the kernel's libraries are made global (``load``); ``max_clients_took_effect``
    says, once the kernel runs, whether it did."""
    global _max_clients
    with _lock:
        if _loaded:
            raise OperationalError("set the kernel's client sessions before the first database opens in this process")
        os.environ["TIQUE_MAX_CLIENTS"] = str(sessions)
        if _max_clients is None:
            path = build(source=MAX_CLIENTS_SOURCE, packaged=MAX_CLIENTS_LIBRARY)
            _max_clients = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)


def max_clients_took_effect() -> bool:
    return _max_clients is not None and ctypes.c_int.in_dll(_max_clients, "tique_max_clients_loaded").value == 1


if __name__ == "__main__":
    print(build(force="--force" in sys.argv))
