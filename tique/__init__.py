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
    "Warning",
]
