"""A database the kernel's flush left with a string heap file shorter than its catalog records opens again.

MonetDB 11.41's store manager writes a string column's heap file, then records the heap's size in BBP.dir as it is
later, after appends made meanwhile; a crash or a close before the next flush leaves a directory the kernel will
not start on (GDKinit fails). tique extends such a file before the kernel starts, only when every committed row's
string is inside the file (tique/engine/heap_repair.py). Seen for real in `make test` on a loaded machine (the
1M-row bases of test_attack_ddl_at_size, 2 of 18 in a loop); here the same state is made exactly: a closed
database whose BBP.dir records more heap bytes than the file of a Cache string column has.

Each database lives in a child process: the test process holds the session's embedded database.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tique.engine import heap_repair

MAKE = """
import json, sys, time, tique
from pathlib import Path
from tique.database import Database
conn = tique.connect(sys.argv[1])
cur = conn.cursor()
cur.execute("CREATE TABLE t (k INT PRIMARY KEY, s VARCHAR(40), c CLOB, b BLOB)")
conn.commit()
for k in range(40):
    cur.execute(
        "INSERT INTO t VALUES (%s, %s, %s, %s)",
        (k, f"value {k}", None if k % 7 == 0 else "x" * k, None if k % 5 == 0 else bytes(range(k))),
    )
    conn.commit()
raw = Database.get(sys.argv[1]).connect_raw()
where = dict(raw.execute(
    "SELECT \\"column\\", location FROM sys.storage WHERE schema = 'tique_data' AND \\"table\\" LIKE '%t__cache'"
).rows)
# the kernel writes the log into its columns' files when the log is large: a 1.2M-row table makes it do so now
raw.execute("CREATE TABLE filler (x INT)")
raw.execute("INSERT INTO filler VALUES " + ",".join(f"({i})" for i in range(1100)))
raw.execute("CREATE TABLE filler2 AS SELECT a.x FROM filler a, filler b WITH DATA")
bbp = Path(sys.argv[1].removeprefix("monetdbe://"), "bat", "BACKUP", "BBP.dir")
deadline = time.monotonic() + 60
while f" {where['b']} " not in bbp.read_text() and time.monotonic() < deadline:
    time.sleep(0.1)
raw.close()
cur.execute("SELECT k, s, c, b FROM t ORDER BY k")
rows = [[*row[:3], None if row[3] is None else row[3].hex()] for row in cur.fetchall()]
print(json.dumps({"rows": rows, "where": where}))
conn.close()
"""

READ = """
import json, sys, warnings, tique
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    conn = tique.connect(sys.argv[1])
cur = conn.cursor()
cur.execute("SELECT k, s, c, b FROM t ORDER BY k")
rows = [[*row[:3], None if row[3] is None else row[3].hex()] for row in cur.fetchall()]
cur.execute("INSERT INTO t VALUES (1000, 'after', 'after', x'00ff')")
conn.commit()
conn.close()
print(json.dumps({"rows": rows, "warnings": [str(w.message) for w in said]}))
"""

PLAIN_OPEN = "import sys, monetdbe; monetdbe.connect(sys.argv[1]).close()"


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=180, cwd=ROOT)


def _made(tmp_path: Path, column: str = "s") -> tuple[Path, list[list[object]], Path]:
    directory = tmp_path / "db"
    made = _run(MAKE, f"monetdbe://{directory}")
    assert made.returncode == 0, made.stderr[-3000:]
    said = json.loads(made.stdout.strip().splitlines()[-1])
    location = Path(said["where"][column])  # NN/NNN, under the database's bat/
    return directory, said["rows"], directory / "bat" / location.parent / (location.name + ".theap")


def _record_more(directory: Path, heap: Path, extra: int) -> int:
    """Make BBP.dir record ``extra`` more bytes for ``heap`` than its file has, as the racing flush does; the size
    now recorded."""
    bbp = directory / heap_repair.BBP_DIR
    lines = bbp.read_text().splitlines(keepends=True)
    physical = heap.relative_to(directory / "bat").as_posix().removesuffix(".theap")
    for i, line in enumerate(lines):
        fields = line.split()
        if len(fields) == heap_repair.VAR_FIELDS and fields[3] == physical:
            recorded = heap.stat().st_size + extra
            fields[22], fields[23] = (
                str(recorded),
                str(max(recorded, int(fields[23]))),
            )  # the heap grew: its capacity too
            lines[i] = " ".join(fields) + "\n"
            bbp.write_text("".join(lines))
            return recorded
    raise AssertionError(f"no BBP.dir entry for {physical}")


def _reads_every_row_repaired(directory: Path, rows: list[list[object]], repaired: Path) -> None:
    """tique opens the damaged directory, reads every row, and warns that it repaired ``repaired``."""
    read = _run(READ, f"monetdbe://{directory}")
    assert read.returncode == 0, read.stderr[-3000:]
    said = json.loads(read.stdout.strip().splitlines()[-1])
    assert said["rows"] == rows
    assert any("repaired" in w and str(repaired) in w for w in said["warnings"]), said["warnings"]


@pytest.mark.parametrize("column", ["s", "c", "b"])  # VARCHAR, CLOB, BLOB
def test_a_heap_file_shorter_than_recorded_is_extended_and_every_row_reads(tmp_path: Path, column: str) -> None:
    directory, rows, heap = _made(tmp_path, column)
    recorded = _record_more(directory, heap, 16)
    plain = _run(PLAIN_OPEN, str(directory))
    assert plain.returncode != 0, "the kernel started on the damaged directory: the test does not make the damage"
    [found] = heap_repair.short_heaps(str(directory))
    assert found.path == heap and found.rows_whole

    _reads_every_row_repaired(directory, rows, heap)
    assert heap.stat().st_size >= recorded
    again = _run(PLAIN_OPEN, str(directory))  # the kernel's own start now works too
    assert again.returncode == 0, again.stderr[-3000:]


def test_a_heap_file_missing_a_committed_string_is_reported_and_left_alone(tmp_path: Path) -> None:
    directory, _, heap = _made(tmp_path)
    recorded = _record_more(directory, heap, 0)
    cut = 8192 + 8  # past the strings' hash table: the first string stays, the later ones are cut off
    with open(heap, "r+b") as f:
        f.truncate(cut)
    [found] = heap_repair.short_heaps(str(directory))
    assert not found.rows_whole and found.recorded == recorded

    read = _run(READ, f"monetdbe://{directory}")
    assert read.returncode != 0
    error = read.stderr.strip().splitlines()[-1]
    assert "cannot repair safely" in error and str(heap) in error and "backup" in error, error
    assert "locked" not in error
    assert heap.stat().st_size == cut, "a heap tique could not vouch for was changed"


def test_an_unrelated_start_failure_does_not_claim_a_lock(tmp_path: Path) -> None:
    directory, _, _ = _made(tmp_path)
    (directory / heap_repair.BBP_DIR).write_text("garbage\n")
    read = _run(READ, f"monetdbe://{directory}")
    assert read.returncode != 0
    error = read.stderr.strip().splitlines()[-1]
    assert "GDKinit" in error and "locked" not in error, error


def test_a_short_copy_the_kernel_puts_back_from_its_backup_is_repaired(tmp_path: Path) -> None:
    """At start the kernel first moves back what an unfinished commit saved in bat/BACKUP. Seen in `make test`:
    the heap in bat/ matched BBP.dir, the copy in BACKUP was 16 bytes short; the check looked at bat/, found
    nothing, and the kernel then put the short copy back and would not start. The check looks at that copy."""
    directory, rows, heap = _made(tmp_path)
    recorded = _record_more(directory, heap, 16)
    saved = directory / "bat" / "BACKUP" / heap.name
    shutil.copyfile(heap, saved)  # the short copy the kernel will put back
    with open(heap, "r+b") as f:
        f.truncate(recorded)  # bat/ itself as long as recorded
    plain = _run(PLAIN_OPEN, str(_copy(directory, tmp_path / "plain")))  # on a copy: a failed start moves files
    assert plain.returncode != 0, "the kernel started: the test does not make the state it was seen in"

    _reads_every_row_repaired(directory, rows, saved)


def _copy(directory: Path, to: Path) -> Path:
    shutil.copytree(directory, to)
    return to


def test_a_short_heap_of_a_flush_killed_while_writing_its_catalog_is_repaired(tmp_path: Path) -> None:
    """Killed inside a flush, after it saved the catalog and a heap in bat/BACKUP/SUBCOMMIT and while it wrote the new
    catalog (bat/BBP.dir cut at a 4 KB boundary): at start the kernel puts the saved catalog and heap back, and the
    heap was 32 bytes shorter than that catalog records. Seen in CI (test_attack_reopen's kill loop, 2026-12-06):
    the check read only bat/BACKUP/BBP.dir, which did not exist, found nothing, and the kernel would not start."""
    directory, rows, heap = _made(tmp_path)
    _record_more(directory, heap, 32)
    subcommit = directory / "bat" / "BACKUP" / "SUBCOMMIT"
    subcommit.mkdir()
    catalog = directory / heap_repair.BBP_DIR
    (directory / "bat" / "BBP.dir").write_bytes(catalog.read_bytes()[:4096])  # the new catalog, half written
    catalog.rename(subcommit / "BBP.dir")
    saved = subcommit / heap.name
    heap.rename(saved)
    plain = _run(PLAIN_OPEN, str(_copy(directory, tmp_path / "plain")))  # on a copy: a failed start moves files
    assert plain.returncode != 0, "the kernel started: the test does not make the state it was seen in"
    [found] = heap_repair.short_heaps(str(directory))
    assert found.path == saved and found.rows_whole

    _reads_every_row_repaired(directory, rows, saved)
    again = _run(PLAIN_OPEN, str(directory))
    assert again.returncode == 0, again.stderr[-3000:]


def test_a_tail_file_the_catalog_counts_rows_in_but_missing_is_named_in_the_error(tmp_path: Path) -> None:
    """A kill during the kernel's flush left a catalog that counts 237 rows in a string column's offsets file that
    did not exist (seen in test_attack_reopen's kill loop, 2026-12-06; plain MonetDB cannot start on it either).
    The rows cannot be rebuilt: the open's error names the file and says to restore from a backup, where the
    kernel says only 'GDKinit() failed'."""
    directory, _, heap = _made(tmp_path)
    [tail] = [p for p in heap.parent.glob(heap.stem + ".tail*")]
    tail.unlink()
    read = _run(READ, f"monetdbe://{directory}")
    assert read.returncode != 0
    error = read.stderr.strip().splitlines()[-1]
    assert "GDKinit" in error and str(tail) in error and "missing" in error and "backup" in error, error
    assert "locked" not in error
