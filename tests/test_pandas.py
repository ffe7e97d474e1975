"""pandas through the SQLAlchemy dialect ``monetdb+tique``: read_sql, read_sql_query with dict params,
read_sql_table, DataFrame.to_sql with if_exists fail / append / replace; embedded and over ``tique serve``."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pandas as pd
import pytest
import sqlalchemy as sa

import tique.sqla  # noqa: F401 - registers the dialect
from tests.test_sqlalchemy import sqlalchemy_url


@pytest.fixture(params=["embedded", "server"])
def sa_engine(request: pytest.FixtureRequest) -> Iterator[sa.Engine]:
    url = (
        request.getfixturevalue("embedded_url")
        if request.param == "embedded"
        else request.getfixturevalue("server").url
    )
    engine = sa.create_engine(sqlalchemy_url(url))
    yield engine
    engine.dispose()


def frame(start: int, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": range(start, start + n),
            "name": [f"n{i}" for i in range(start, start + n)],
            "x": [i / 4 for i in range(start, start + n)],
        }
    )


def test_to_sql_fail_append_replace(sa_engine: sa.Engine, unique_name: Callable[[str], str]) -> None:
    name = unique_name("df")
    assert frame(0, 3).to_sql(name, sa_engine, index=False) == 3
    with pytest.raises(ValueError, match="already exists"):
        frame(0, 3).to_sql(name, sa_engine, index=False, if_exists="fail")
    frame(3, 2).to_sql(name, sa_engine, index=False, if_exists="append")
    back = pd.read_sql_table(name, sa_engine).sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(back, frame(0, 5), check_dtype=False)
    frame(10, 2).to_sql(name, sa_engine, index=False, if_exists="replace")
    back = pd.read_sql_table(name, sa_engine).sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(back, frame(10, 2), check_dtype=False)
    assert name in sa.inspect(sa_engine).get_table_names()


def test_read_sql_and_params(sa_engine: sa.Engine, unique_name: Callable[[str], str]) -> None:
    name = unique_name("rq")
    frame(0, 6).to_sql(name, sa_engine, index=True, index_label="row")
    everything = pd.read_sql(f"SELECT id, name FROM {name} ORDER BY id", sa_engine)
    assert everything["id"].tolist() == list(range(6)) and everything["name"].tolist()[-1] == "n5"
    some = pd.read_sql_query(
        sa.text(f"SELECT id, x FROM {name} WHERE id >= :low AND name <> :skip ORDER BY id"),
        sa_engine,
        params={"low": 2, "skip": "n3"},
    )
    assert some["id"].tolist() == [2, 4, 5] and some["x"].tolist() == [0.5, 1.0, 1.25]
    pyformat = pd.read_sql_query(f"SELECT COUNT(*) AS n FROM {name} WHERE id < %(top)s", sa_engine, params={"top": 4})
    assert pyformat["n"].tolist() == [4]
    table = pd.read_sql_table(name, sa_engine, columns=["row", "name"])
    assert sorted(table["row"].tolist()) == list(range(6))


@pytest.mark.parametrize(
    "how", [{"chunksize": 2}, {"chunksize": 2, "method": "multi"}, {"method": "multi"}, {}], ids=str
)
def test_a_failed_to_sql_keeps_nothing(
    sa_engine: sa.Engine, unique_name: Callable[[str], str], how: dict[str, object]
) -> None:
    """pandas commits after a chunk's INSERT raised (its exit stack ends the transaction as a success), so the
    chunks before a duplicate key were kept while tique let a transaction go on after a failed statement (found by
    a review); plain MonetDB refuses that COMMIT. The failed statement now aborts the transaction."""
    name = unique_name("df")
    clashing = pd.concat([frame(10, 2), frame(1, 1), frame(12, 1)])  # the third row repeats a stored id
    with sa_engine.begin() as conn:  # a key, so the repeated id is refused
        conn.execute(sa.text(f"CREATE TABLE {name} (id BIGINT PRIMARY KEY, name CLOB, x DOUBLE)"))
        conn.execute(sa.text(f"INSERT INTO {name} VALUES (1, 'n1', 0.25)"))
    with pytest.raises(Exception):  # noqa: B017 - pandas raises the refusal, or the COMMIT's TransactionFailed
        clashing.to_sql(name, sa_engine, index=False, if_exists="append", **how)  # type: ignore[arg-type]
    assert pd.read_sql(f"SELECT id FROM {name} ORDER BY id", sa_engine)["id"].tolist() == [1]
