"""SQLAlchemy through the dialect ``monetdb+tique`` (tique/sqla.py), embedded and over ``tique serve``: Core, ORM
with a relationship, create_all/drop_all, reflection, generated keys and conflicts as OperationalError."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

import tique
import tique.sqla  # registers the dialect for a source checkout (the entry point does when installed)
from tests.conftest import ServeProcess


def sqlalchemy_url(tique_url: str) -> str:
    if tique_url.startswith("monetdbe://"):
        return "monetdb+tique:///" + tique_url[len("monetdbe://") :]  # monetdb+tique:////abs/path
    return "monetdb+tique://" + tique_url.split("://", 1)[1]


@pytest.fixture(params=["embedded", "server"])
def sa_engine(request: pytest.FixtureRequest) -> Iterator[sa.Engine]:
    if request.param == "embedded":
        url = request.getfixturevalue("embedded_url")
    else:
        server: ServeProcess = request.getfixturevalue("server")
        url = server.url
    engine = sa.create_engine(sqlalchemy_url(url))
    yield engine
    engine.dispose()


def test_urls() -> None:
    dialect = tique.sqla.TiqueDialect()
    assert dialect.create_connect_args(sa.make_url("monetdb+tique:////abs/path/db"))[0] == ["monetdbe:///abs/path/db"]
    args, settings = dialect.create_connect_args(sa.make_url("monetdb+tique://u:p%40w@h:5/db?write_mode=direct"))
    assert args == ["monetdb://u:p%40w@h:5/db"] and settings == {"write_mode": "direct"}
    assert dialect.create_connect_args(sa.make_url("monetdb+tique://"))[0] == ["monetdbe::memory:"]
    relative = dialect.create_connect_args(sa.make_url("monetdb+tique:///rel/db"))[0]
    assert relative == [f"monetdbe://{os.path.abspath('rel/db')}"]


def test_core_and_create_all(sa_engine: sa.Engine, unique_name: Callable[[str], str]) -> None:
    md = sa.MetaData()
    t = sa.Table(
        unique_name("core"),
        md,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(20), nullable=False),
        sa.Column("score", sa.Float),
    )
    md.create_all(sa_engine)
    md.create_all(sa_engine)  # sees the table: creates nothing
    with sa_engine.begin() as conn:
        first = conn.execute(t.insert().values(name="a", score=1.5))
        assert first.inserted_primary_key is not None
        conn.execute(t.insert(), [{"name": "b", "score": 2.0}, {"name": "c", "score": None}])
        conn.execute(t.update().where(t.c.name == "b").values(score=3.0))
        conn.execute(t.delete().where(t.c.name == "c"))
    with sa_engine.connect() as conn:
        rows = conn.execute(sa.select(t.c.id, t.c.name, t.c.score).order_by(t.c.id)).all()
        by_name = conn.execute(sa.select(t.c.score).where(t.c.name == sa.bindparam("n")), {"n": "b"}).scalar()
    assert [(r.name, r.score) for r in rows] == [("a", 1.5), ("b", 3.0)]
    assert rows[0].id == first.inserted_primary_key[0] and by_name == 3.0
    assert sa.inspect(sa_engine).has_table(t.name)
    md.drop_all(sa_engine)
    assert not sa.inspect(sa_engine).has_table(t.name)


def test_reflection(sa_engine: sa.Engine, unique_name: Callable[[str], str]) -> None:
    name = unique_name("refl")
    with sa_engine.begin() as conn:
        conn.execute(
            sa.text(f"CREATE TABLE {name} (id INT AUTO_INCREMENT PRIMARY KEY, nick VARCHAR(16) NOT NULL, d DATE)")
        )
        conn.execute(sa.text(f"CREATE INDEX {name}_nick ON {name} (nick)"))
    inspector = sa.inspect(sa_engine)
    tables = inspector.get_table_names()
    assert name in tables
    assert not [t for t in tables if t.endswith(("__storage", "__cache"))]
    assert name not in inspector.get_view_names()
    columns = inspector.get_columns(name)
    assert [(c["name"], c["nullable"]) for c in columns] == [("id", False), ("nick", False), ("d", True)]
    assert isinstance(columns[1]["type"], sa.String) and columns[1]["type"].length == 16
    assert columns[0]["autoincrement"] is True
    assert inspector.get_pk_constraint(name)["constrained_columns"] == ["id"]
    assert [i["column_names"] for i in inspector.get_indexes(name)] == [["nick"]]
    reflected = sa.Table(name, sa.MetaData(), autoload_with=sa_engine)
    assert [c.name for c in reflected.primary_key] == ["id"]
    with sa_engine.begin() as conn:
        conn.execute(reflected.insert().values(nick="x"))
        assert conn.execute(sa.select(reflected.c.nick)).scalars().all() == ["x"]
        conn.execute(sa.text(f"DROP TABLE {name}"))


def test_orm_relationship(sa_engine: sa.Engine, unique_name: Callable[[str], str]) -> None:
    authors, books = unique_name("author"), unique_name("book")

    class Base(DeclarativeBase):
        pass

    class Author(Base):
        __tablename__ = authors
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str] = mapped_column(sa.String(30))
        books: Mapped[list[Book]] = relationship(back_populates="author", order_by="Book.id")

    class Book(Base):
        __tablename__ = books
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str] = mapped_column(sa.String(50))
        author_id: Mapped[int] = mapped_column(sa.ForeignKey(f"{authors}.id"))
        author: Mapped[Author] = relationship(back_populates="books")

    Base.metadata.create_all(sa_engine)
    with Session(sa_engine) as session:
        ann = Author(name="Ann", books=[Book(title="one"), Book(title="two")])
        bob = Author(name="Bob", books=[Book(title="three")])
        session.add_all([ann, bob])
        session.commit()
        ids = {ann.id, bob.id, *(b.id for b in ann.books + bob.books)}
    assert None not in ids and len({ann.id, bob.id}) == 2
    with Session(sa_engine) as session:
        found = session.scalars(sa.select(Author).where(Author.name == "Ann")).one()
        assert [b.title for b in found.books] == ["one", "two"]
        joined = session.execute(
            sa.select(Author.name, Book.title).join(Author.books).where(Book.title == "three")
        ).all()
        assert [tuple(r) for r in joined] == [("Bob", "three")]
        found.books[0].title = "uno"
        session.delete(found.books[1])
        session.commit()
    with Session(sa_engine) as session:
        assert session.scalars(sa.select(Book.title).order_by(Book.id)).all() == ["uno", "three"]
    Base.metadata.drop_all(sa_engine)
    assert not sa.inspect(sa_engine).has_table(books)


def test_orm_foreign_key_and_unique_enforced(sa_engine: sa.Engine, unique_name: Callable[[str], str]) -> None:
    """The dialect creates FOREIGN KEY and UNIQUE constraints, and tique enforces them."""
    owners, pets = unique_name("owner"), unique_name("pet")

    class Base(DeclarativeBase):
        pass

    class Owner(Base):
        __tablename__ = owners
        id: Mapped[int] = mapped_column(primary_key=True)
        email: Mapped[str] = mapped_column(sa.String(30), unique=True)
        pets: Mapped[list[Pet]] = relationship(back_populates="owner")

    class Pet(Base):
        __tablename__ = pets
        id: Mapped[int] = mapped_column(primary_key=True)
        owner_id: Mapped[int] = mapped_column(sa.ForeignKey(f"{owners}.id"))
        owner: Mapped[Owner] = relationship(back_populates="pets")

    Base.metadata.create_all(sa_engine)
    inspector = sa.inspect(sa_engine)
    [fk] = inspector.get_foreign_keys(pets)
    assert (fk["constrained_columns"], fk["referred_table"], fk["referred_columns"]) == (["owner_id"], owners, ["id"])
    assert [u["column_names"] for u in inspector.get_unique_constraints(owners)] == [["email"]]
    with Session(sa_engine) as session:
        session.add(Owner(email="a@x", pets=[Pet()]))
        session.commit()
        owner_id = session.scalars(sa.select(Owner.id)).one()
    with Session(sa_engine) as session, pytest.raises(exc.IntegrityError):
        session.add(Owner(email="a@x"))
        session.commit()
    with Session(sa_engine) as session, pytest.raises(exc.IntegrityError):
        session.add(Pet(owner_id=owner_id + 1000))
        session.commit()
    with Session(sa_engine) as session, pytest.raises(exc.IntegrityError):
        session.execute(sa.delete(Owner).where(Owner.id == owner_id))  # its pet references it
    with Session(sa_engine) as session:
        owner = session.get(Owner, owner_id)
        assert owner is not None
        for pet in owner.pets:
            session.delete(pet)
        session.delete(owner)
        session.commit()
    Base.metadata.drop_all(sa_engine)


def test_conflict_is_operational_error(sa_engine: sa.Engine, unique_name: Callable[[str], str]) -> None:
    md = sa.MetaData()
    t = sa.Table(
        unique_name("conf"),
        md,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("v", sa.Integer),
    )
    md.create_all(sa_engine)
    with sa_engine.begin() as conn:
        conn.execute(t.insert().values(id=1, v=0))
    first, second = sa_engine.connect(), sa_engine.connect()
    try:
        first.execute(t.update().where(t.c.id == 1).values(v=t.c.v + 1))
        second.execute(t.update().where(t.c.id == 1).values(v=t.c.v + 10))
        first.commit()
        with pytest.raises(exc.OperationalError) as raised:
            second.commit()
        assert isinstance(raised.value.orig, tique.SerializationFailure)
        second.rollback()
    finally:
        first.close()
        second.close()
    with sa_engine.connect() as conn:
        assert conn.execute(sa.select(t.c.v)).scalar() == 1


def test_concurrent_orm_inserts_get_distinct_keys(sa_engine: sa.Engine, unique_name: Callable[[str], str]) -> None:
    md = sa.MetaData()
    t = sa.Table(unique_name("many"), md, sa.Column("id", sa.BigInteger, primary_key=True), sa.Column("w", sa.Integer))
    md.create_all(sa_engine)
    keys: list[int] = []

    def worker(w: int) -> None:
        for _ in range(10):
            with sa_engine.begin() as conn:
                keys.append(conn.execute(t.insert().values(w=w)).inserted_primary_key[0])

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    with sa_engine.connect() as conn:
        stored = sorted(conn.execute(sa.select(t.c.id)).scalars())
    assert len(keys) == 30 and sorted(keys) == stored and len(set(stored)) == 30


def test_object_with_only_generated_values(sa_engine: sa.Engine, unique_name: Callable[[str], str]) -> None:
    """SQLAlchemy sends INSERT ... DEFAULT VALUES for an object whose columns all have defaults."""

    class Base(DeclarativeBase):
        pass

    class Ticket(Base):
        __tablename__ = unique_name("ticket")
        id: Mapped[int] = mapped_column(primary_key=True)
        state: Mapped[str] = mapped_column(sa.String(8), server_default="open")

    Base.metadata.create_all(sa_engine)
    with Session(sa_engine) as session:
        tickets = [Ticket(), Ticket()]
        session.add_all(tickets)
        session.commit()
        assert tickets[0].id != tickets[1].id
        assert session.scalars(sa.select(Ticket.state)).all() == ["open", "open"]
    with sa_engine.begin() as conn:
        assert conn.execute(Ticket.__table__.insert()).inserted_primary_key[0] > max(t.id for t in tickets)


def test_importing_the_dialect_leaves_pymonetdb_paramstyle_alone() -> None:
    import pymonetdb

    import tique.sqla  # noqa: F401  (sqlalchemy-monetdb sets pymonetdb.paramstyle = "named" when imported)

    assert pymonetdb.paramstyle == "pyformat"


def test_orm_update_of_a_plain_table_row(sa_engine: sa.Engine, unique_name: Callable[[str], str]) -> None:
    """Over MAPI a write to a plain (or temporary) table counts no rows: the ORM took its UPDATE as stale
    (StaleDataError, "expected 1; -1 were matched"; found by a review). tique's dialect says so for server URLs."""
    name = unique_name("plainorm")

    class Base(DeclarativeBase):
        pass

    class Row(Base):
        __tablename__ = name
        id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
        v: Mapped[str] = mapped_column(sa.String(10))

    with Session(sa_engine) as session:
        session.execute(sa.text(f"CREATE TABLE {name} (id INT PRIMARY KEY, v VARCHAR(10)) -- tique: plain"))
        session.add(Row(id=1, v="a"))
        session.flush()
        row = session.get(Row, 1)
        assert row is not None
        row.v = "b"
        session.commit()
    with Session(sa_engine) as session:
        assert session.execute(sa.select(Row.v)).scalars().all() == ["b"]
