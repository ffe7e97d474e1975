"""tique: snapshot-isolated transactions for MonetDB, implemented in the query language itself."""

from tique.errors import (
    CommitOutcomeUnknown,
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    SerializationFailure,
    StorageFull,
    TransactionFailed,
    Warning,  # noqa: A004 - PEP 249 requires the name
)

__version__ = "0.1.0"

__all__ = [
    "CommitOutcomeUnknown",
    "DataError",
    "DatabaseError",
    "Error",
    "IntegrityError",
    "InterfaceError",
    "InternalError",
    "NotSupportedError",
    "OperationalError",
    "ProgrammingError",
    "SerializationFailure",
    "StorageFull",
    "TransactionFailed",
    "Warning",
]

# PEP 249 module interface
from tique import exceptions, types
from tique.connection import Connection, connect
from tique.cursor import Cursor
from tique.dbapi import (
    BINARY,
    DATE,
    DATETIME,
    NUMBER,
    ROWID,
    STRING,
    TIME,
    Binary,
    Date,
    DateFromTicks,
    Time,
    TimeFromTicks,
    Timestamp,
    TimestampFromTicks,
    TimestampTzFromTicks,
    TimeTzFromTicks,
)

apilevel = "2.0"
threadsafety = 1  # threads may share the module, not connections
paramstyle = "pyformat"

__all__ += [
    "BINARY",
    "DATE",
    "DATETIME",
    "NUMBER",
    "ROWID",
    "STRING",
    "TIME",
    "Binary",
    "Connection",
    "Cursor",
    "Date",
    "DateFromTicks",
    "Time",
    "TimeFromTicks",
    "TimeTzFromTicks",
    "Timestamp",
    "TimestampFromTicks",
    "TimestampTzFromTicks",
    "apilevel",
    "connect",
    "exceptions",
    "paramstyle",
    "threadsafety",
    "types",
]
