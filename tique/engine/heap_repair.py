"""Start-up repair of one known on-disk inconsistency the embedded kernel (MonetDB 11.41) leaves behind.

The kernel's store manager writes committed columns to disk while transactions keep appending. For a string (or
blob) column, the heap's file is written first and the catalog of columns (``bat/BACKUP/BBP.dir``) afterwards, with
the heap's size as it is *then*: a value appended in between is counted in BBP.dir but missing from the file. Until
the next flush rewrites both, a crash or a close that does not flush leaves a directory the kernel refuses to start
on: GDKinit fails ("file ... too small", seen only in its trace). Measured here: 2 of 18 databases with a 1M-row
load and 300 commits, closed normally on a loaded machine, would not open again.

The missing bytes belong to no row the file's column counts: those rows' values were in the heap before it was
written, and the rows appended later are replayed from the write-ahead log, values and all. So the repair extends
such a heap file with zeros to the recorded size, after checking that every counted row's value lies whole inside
the bytes the file has. A short file that fails that check is real damage and is only reported.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

BBP_DIR = Path("bat", "BACKUP", "BBP.dir")
HEADER_LINES = 4  # "BBP.dir, GDKversion N", the sizes line, BBPsize=, BBPinfo=
STRING_HEAPS = {"str", "json", "url"}  # atoms stored as str: offsets in the tail, NUL-terminated strings in the heap
BLOB_HEAPS = {"blob"}  # byte offsets in the tail; in the heap a length (8 bytes, all ones for NULL), then the bytes
BLOB_NIL = (1 << 64) - 1
FIXED_FIELDS, VAR_FIELDS = 22, 25  # an entry's fields without / with the string heap's (free, size, 0)
VAR_SHIFT, VAR_OFFSET = 0, 8192  # offsets are byte positions; 1- and 2-byte ones start past the 8 KB hash table


@dataclass(frozen=True)
class ShortHeap:
    """A heap file shorter than BBP.dir records, and whether every counted row's value is inside the file."""

    path: Path
    recorded: int
    actual: int
    rows_whole: bool

    def describe(self) -> str:
        return f"{self.path} has {self.actual} bytes, the kernel's catalog records {self.recorded}"


def _entries(root: Path) -> list[list[str]]:
    """The fields of each column's line in the catalog the kernel will start from (none if it cannot be read)."""
    try:
        lines = catalog(root).read_text().splitlines()[HEADER_LINES:]
    except (OSError, UnicodeDecodeError):
        return []
    return [line.split() for line in lines]


def short_heaps(directory: str) -> list[ShortHeap]:
    """Every string or blob heap of the database whose file is shorter than the size BBP.dir records for it."""
    root = Path(directory)
    found = []
    for fields in _entries(root):
        if len(fields) != VAR_FIELDS or fields[8] not in STRING_HEAPS | BLOB_HEAPS:
            continue
        base = root / "bat" / fields[3]
        heap, recorded = effective(base.with_name(base.name + ".theap")), int(fields[22])
        try:
            actual = heap.stat().st_size
        except OSError:
            continue  # a missing file is not this case
        if actual < recorded:
            count, width = int(fields[5]), int(fields[9])
            whole = _rows_whole(base, count, width, heap, actual, blob=fields[8] in BLOB_HEAPS)
            found.append(ShortHeap(heap, recorded, actual, whole))
    return found


def missing_files(directory: str) -> list[str]:
    """The files the catalog counts rows in that do not exist, or whose values file is shorter than it records
    (a short heap is ``short_heaps``' case): the kernel will not start, and nothing can rebuild them. Seen after a
    kill during the kernel's flush: a catalog counting 237 rows in a string column's ``.tail2`` that was not there.
    Asked only once an open has failed, to say why."""
    root = Path(directory)
    said = []
    for fields in _entries(root):
        if len(fields) not in (FIXED_FIELDS, VAR_FIELDS) or fields[8] == "void" or int(fields[5]) == 0:
            continue
        base, width, used = root / "bat" / fields[3], int(fields[9]), int(fields[17])
        tails = _tail_names(base, width) if fields[8] in STRING_HEAPS else [base.with_name(base.name + ".tail")]
        tail = next((p for p in map(effective, tails) if p.exists()), None)
        if used > 0 and tail is None:
            said.append(f"{tails[0]} is missing (the kernel's catalog counts {fields[5]} rows in it, {used} bytes)")
        elif used > 0 and tail is not None and (size := tail.stat().st_size) < used:
            said.append(f"{tail} has {size} bytes, the kernel's catalog records {used}")
        if len(fields) == VAR_FIELDS and int(fields[22]) > 0:
            heap = effective(base.with_name(base.name + ".theap"))
            if not heap.exists():
                said.append(f"{heap} is missing (the kernel's catalog records {fields[22]} bytes)")
    return said


def catalog(root: Path) -> Path:
    """The BBP.dir the kernel will start from. A flush killed inside its commit leaves the catalog it saved in
    bat/BACKUP/SUBCOMMIT (and a half-written new one in bat/): at start the kernel moves the saved one back, as it
    does a heap file (``effective``). Seen in CI: that catalog recorded a heap 32 bytes longer than its file."""
    bat = root / "bat"
    found = (bat / "BACKUP" / "SUBCOMMIT" / "BBP.dir", root / BBP_DIR, bat / "BBP.dir")
    return next((path for path in found if path.exists()), root / BBP_DIR)


def effective(path: Path) -> Path:
    """The file the kernel will use for ``path`` (bat/NN/NNN.ext): at start it first moves back what a commit it
    did not finish saved in bat/BACKUP (or bat/BACKUP/SUBCOMMIT) under the file's own name. Seen: a database whose
    heap in bat/ matched BBP.dir while the copy in BACKUP, put back at the start, was 16 bytes short."""
    bat = next((parent for parent in path.parents if parent.name == "bat"), None)
    if bat is None:
        return path
    for saved in (bat / "BACKUP" / path.name, bat / "BACKUP" / "SUBCOMMIT" / path.name):
        if saved.exists():
            return saved
    return path


def _rows_whole(base: Path, count: int, width: int, heap: Path, size: int, blob: bool) -> bool:
    """Whether each of the first ``count`` offsets in the column's tail points at a value that lies whole inside
    the ``size`` bytes of ``heap``: a string up to its NUL, a blob's length and bytes."""
    if width not in (1, 2, 4, 8):
        return False
    tails = (effective(p) for p in _tail_names(base, width))
    tail = next((p for p in tails if p.exists() and p.stat().st_size >= count * width), None)
    if tail is None:
        return False
    offsets = memoryview(tail.read_bytes()[: count * width]).cast({1: "B", 2: "H", 4: "I", 8: "Q"}[width])
    data = heap.read_bytes()[:size]
    for value in offsets:
        start = (value + (VAR_OFFSET if width < 4 and not blob else 0)) << VAR_SHIFT
        if blob:
            if start + 8 > size:
                return False
            length = int.from_bytes(data[start : start + 8], sys.byteorder)
            if length != BLOB_NIL and start + 8 + length > size:
                return False
        elif start >= size or data.find(b"\0", start) < 0:
            return False
    return True


def _tail_names(base: Path, width: int) -> list[Path]:
    """The tail's file: ``.tail1``/``.tail2``/``.tail4`` for narrow str offsets, ``.tail`` otherwise."""
    names = [f"{base.name}.tail{width}"] if width < 8 else []
    return [base.with_name(name) for name in [*names, f"{base.name}.tail"]]


def repair(found: list[ShortHeap]) -> None:
    """Extend each heap file (all of whose counted rows are whole) with zeros to its recorded size."""
    for short in found:
        if not short.rows_whole:
            raise ValueError(f"not repairable: {short.describe()}")
    for short in found:
        with open(short.path, "r+b") as f:
            f.truncate(short.recorded)
            f.flush()
            os.fsync(f.fileno())
