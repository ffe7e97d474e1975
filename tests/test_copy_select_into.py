"""MonetDB's export ``COPY SELECT ... INTO 'file' USING DELIMITERS ...`` failed through tique with a syntax error
about a WITH the user never wrote (sqlglot's PostgreSQL COPY printed it as COPY ... WITH), on plain tables too.
Over MonetDB's own tables it now runs as written; over a tique table it exports the transaction's snapshot with
its own writes. The files must equal those plain MonetDB writes for plain twins holding the same rows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import tique
from tique.database import Database
from tique.engine.base import RawConnection

Twins = tuple[tique.Connection, RawConnection, Callable[[str], str]]
DDL = "CREATE TABLE {t} (k INT PRIMARY KEY, v INT, s VARCHAR(10))"
ROWS = "INSERT INTO {t} VALUES (1, 10, 'a'), (2, NULL, 'b,c'), (3, 30, NULL)"
EXPORTS = [
    "COPY SELECT * FROM {t} ORDER BY k INTO '{out}' USING DELIMITERS ','",
    "COPY SELECT k, v * 2 AS w FROM {t} WHERE k IN (SELECT k FROM {t} WHERE s IS NOT NULL) ORDER BY k "
    "INTO '{out}' USING DELIMITERS '|', '\\n', '\"' NULL AS 'none'",
    "COPY (SELECT s, count(*) FROM {t} GROUP BY s ORDER BY s) INTO '{out}'",
    "copy with x AS (SELECT k FROM {t}) select k from x order by k into '{out}' using delimiters ';'",
]


@pytest.fixture
def twins(embedded_url: str, unique_name: Callable[[str], str]) -> Iterator[Twins]:
    conn = tique.connect(embedded_url)
    raw = Database.get(embedded_url).connect_raw()
    yield conn, raw, unique_name
    conn.rollback()
    conn.close()
    raw.close()


@pytest.mark.parametrize("export", EXPORTS)
def test_export_of_a_tique_table_is_its_snapshot(twins: Twins, embedded_url: str, tmp_path: Path, export: str) -> None:
    conn, raw, unique_name = twins
    t, p = unique_name("cx_t"), unique_name("cx_p")
    cur = conn.cursor()
    cur.execute(DDL.format(t=t))
    cur.execute(ROWS.format(t=t))
    conn.commit()
    raw.execute(DDL.format(t=p) + " -- tique: plain")
    raw.execute(ROWS.format(t=p))
    cur.execute(f"SELECT count(*) FROM {t}")  # the snapshot begins here
    other = tique.connect(embedded_url)  # a commit after the snapshot began is not exported
    other.cursor().execute(f"INSERT INTO {t} VALUES (9, 90, 'late')")
    other.commit()
    other.close()
    for write in ("UPDATE {t} SET v = 11 WHERE k = 1", "INSERT INTO {t} VALUES (4, 40, 'own')"):
        cur.execute(write.format(t=t))  # the transaction's own writes are exported
        raw.execute(write.format(t=p))
    mine, theirs = tmp_path / "tique.csv", tmp_path / "plain.csv"
    cur.execute(export.format(t=t, out=mine))
    raw.execute(export.format(t=p, out=theirs))
    assert mine.read_text() == theirs.read_text() != ""
    conn.commit()


def test_export_of_a_plain_table_runs_as_written(twins: Twins, tmp_path: Path) -> None:
    conn, raw, unique_name = twins
    p = unique_name("cx_plain")
    raw.execute(DDL.format(t=p) + " -- tique: plain")
    raw.execute(ROWS.format(t=p))
    mine, theirs = tmp_path / "tique.csv", tmp_path / "plain.csv"
    export = "COPY SELECT * FROM {t} ORDER BY k INTO '{out}' USING DELIMITERS ',' NULL AS ''"
    conn.cursor().execute(export.format(t=p, out=mine))
    raw.execute(export.format(t=p, out=theirs))
    assert mine.read_text() == theirs.read_text() == '1,10,"a"\n2,,"b,c"\n3,30,\n'
    conn.commit()


def test_export_without_a_file_says_what_to_write(twins: Twins) -> None:
    conn, _, _ = twins
    with pytest.raises(tique.ProgrammingError, match="INTO 'file'"):
        conn.cursor().execute("COPY SELECT 1 USING DELIMITERS ','")
    conn.rollback()
