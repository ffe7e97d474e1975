"""Build and load tique's C module (udf/tique_udf.c) into this process's MonetDB kernel.

The module registers itself with MAL from a library constructor, so it must be loaded after libmonetdb5 (with
RTLD_GLOBAL, for its symbols) and before the first database is opened in the process.
"""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from tique.errors import OperationalError

ABI = 5  # must match TIQUE_UDF_ABI in udf/tique_udf.c
SUPPORTED_KERNEL = "11.41"  # the structure layouts declared in the C source are this kernel's

PACKAGE_DIR = Path(__file__).resolve().parent.parent
SOURCE = PACKAGE_DIR.parent / "udf" / "tique_udf.c"
LIBRARY = PACKAGE_DIR / "_lib" / "tique_udf.so"

_lock = threading.Lock()
_loaded = False


def monetdbe_libdir() -> Path:
    import monetdbe._lowlevel as lowlevel  # loads the bundled kernel libraries

    return Path(lowlevel.__file__).resolve().parent.parent / "monetdbe.libs"


def kernel_version() -> str:
    """The SQL kernel version of the bundled MonetDB, read from its library's file name (e.g. 11.41.14)."""
    names = glob.glob(str(monetdbe_libdir() / "libmonetdbsql-*.so.*"))
    if not names:
        raise OperationalError(
            "cannot find libmonetdbsql in the monetdbe wheel; reinstall it: pip install monetdbe==0.11"
        )
    return names[0].rsplit(".so.", 1)[1]


def build(force: bool = False) -> Path:
    """Compile the module with the system C compiler if it is missing or older than its source."""
    if LIBRARY.exists() and not force and (not SOURCE.exists() or LIBRARY.stat().st_mtime >= SOURCE.stat().st_mtime):
        return LIBRARY
    if not SOURCE.exists():
        raise OperationalError(f"tique's C module is not built and its source {SOURCE} is missing; run 'make build'")
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise OperationalError("no C compiler found to build tique's engine module: install gcc (apt-get install gcc)")
    LIBRARY.parent.mkdir(parents=True, exist_ok=True)
    tmp = LIBRARY.with_suffix(f".{os.getpid()}.tmp")
    cmd = [compiler, "-O2", "-Wall", "-fPIC", "-shared", "-pthread", "-o", str(tmp), str(SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise OperationalError(f"building tique's C module failed ({' '.join(cmd)}):\n{proc.stderr}")
    os.replace(tmp, LIBRARY)
    return LIBRARY


def load() -> None:
    """Load the module into this process once, checking the kernel version first."""
    global _loaded
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
        ctypes.CDLL(str(build()), mode=ctypes.RTLD_GLOBAL)
        _loaded = True


def is_loaded() -> bool:
    return _loaded


if __name__ == "__main__":
    print(build(force="--force" in sys.argv))
