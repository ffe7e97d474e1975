"""The error registry (tique.errors, as psycopg's errors module): one class per SQLSTATE tique tells apart, a
lookup by code, each class carrying its code, and MonetDB's error texts (the C module's own codes included)
raised as the registered class. No engine needed."""

from __future__ import annotations

import pytest

from tique import errors
from tique.errors import (
    CommitOutcomeUnknown,
    CommitStuck,
    ConnectionDoesNotExist,
    ConnectionException,
    ConnectionFailure,
    ForeignKeyViolation,
    IntegrityError,
    InterfaceError,
    LeaseExpired,
    NotNullViolation,
    OperationalError,
    SerializationFailure,
    StorageFull,
    Timeout,
    TransactionFailed,
    UniqueViolation,
    class_for_sqlstate,
    connection_lost,
    from_monetdb,
    lookup,
    stuck_commit,
)

REGISTERED = {
    "23502": (NotNullViolation, IntegrityError),
    "23503": (ForeignKeyViolation, IntegrityError),
    "23505": (UniqueViolation, IntegrityError),
    "40001": (SerializationFailure, OperationalError),
    "53100": (StorageFull, OperationalError),
    "08000": (ConnectionException, OperationalError),
    "08003": (ConnectionDoesNotExist, ConnectionException),
    "08006": (ConnectionFailure, ConnectionException),
    "HYT00": (Timeout, OperationalError),
    "TQ001": (TransactionFailed, InterfaceError),
    "TQ002": (CommitOutcomeUnknown, OperationalError),
    "TQ003": (LeaseExpired, SerializationFailure),
    "TQ004": (CommitStuck, Timeout),
}


@pytest.mark.parametrize(("code", "classes"), REGISTERED.items())
def test_lookup_gives_the_class_that_carries_the_code(code: str, classes: tuple[type, type]) -> None:
    cls, base = classes
    assert lookup(code) is cls and issubclass(cls, base)
    assert cls.sqlstate == code  # type: ignore[attr-defined]
    assert cls("what failed").sqlstate == code  # an instance carries its class's code unless given another
    assert cls("what failed", "XX999").sqlstate == "XX999"


def test_an_unregistered_code_is_a_key_error_and_falls_back_by_its_class() -> None:
    with pytest.raises(KeyError):
        lookup("22012")
    assert class_for_sqlstate("22012") is errors.DataError
    assert class_for_sqlstate("08001") is ConnectionException  # any 08 code is a connection exception
    assert class_for_sqlstate("53200") is StorageFull
    assert class_for_sqlstate(None) is OperationalError


@pytest.mark.parametrize("code", [c for c in REGISTERED if c != "TQ001"])
def test_monetdb_texts_are_raised_as_the_registered_class(code: str) -> None:
    error = from_monetdb(f"MALException:tique.publish:{code}!tique: something failed")
    assert type(error) is lookup(code) and error.sqlstate == code
    assert str(error) == "tique: something failed"  # the message as the engine wrote it, code split off


def test_a_driver_side_code_relayed_by_the_engine_stays_a_database_error() -> None:
    error = from_monetdb("TQ001!the transaction was aborted")
    assert isinstance(error, errors.DatabaseError) and error.sqlstate == "TQ001"


def test_the_tique_codes_are_in_a_class_of_their_own() -> None:
    ours = [code for code in REGISTERED if code.startswith("TQ")]
    assert len(ours) == 4 and all(len(code) == 5 and code[:2] == "TQ" for code in ours)
    # class TQ is implementation-defined (its first letter is past H) and neither MonetDB nor PostgreSQL uses it
    assert "I" <= ours[0][0] <= "Z"


def test_monetdb_commit_failures_are_told_apart_by_its_words_in_one_place() -> None:
    conflict = from_monetdb("40000!COMMIT: transaction is aborted because of concurrency conflicts, will ROLLBACK")
    constraint = from_monetdb("40000!COMMIT: transaction is aborted because of a constraint violation")
    assert type(conflict) is SerializationFailure and conflict.sqlstate == "40000"
    assert type(constraint) is IntegrityError and constraint.sqlstate == "40000"


def test_a_commit_stuck_deciding_names_the_commit_to_settle() -> None:
    text = (
        "MALException:tique.advance:TQ004!tique: commit 12 waited 200 ms for commit 11 (state deciding); its client "
        "may have died: recovery or the lease (1000 ms) will settle it"
    )
    stuck = from_monetdb(text)
    assert isinstance(stuck, CommitStuck) and stuck_commit(stuck) == 11
    waited = from_monetdb(text.replace("TQ004", "HYT00").replace("deciding", "taken"))
    assert type(waited) is Timeout and stuck_commit(waited) is None


def test_connection_lost_is_told_by_code_only() -> None:
    assert connection_lost(ConnectionFailure("lost the connection to the server"))
    assert connection_lost(InterfaceError("connection is closed", "08003"))
    assert not connection_lost(OperationalError("lost the connection"))  # words alone are not a code
