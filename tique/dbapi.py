"""PEP 249 type objects and constructors (as pymonetdb defines them)."""

from __future__ import annotations

import datetime
import time


class DBAPITypeObject(frozenset[str]):
    """Compares equal to every type code it holds: ``cursor.description[i][1] == NUMBER``."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other in self
        return frozenset.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return frozenset.__hash__(self)


STRING = DBAPITypeObject({"varchar", "char", "clob", "text", "string", "json", "url", "uuid"})
BINARY = DBAPITypeObject({"blob"})
NUMBER = DBAPITypeObject(
    {"tinyint", "smallint", "int", "bigint", "hugeint", "decimal", "real", "double", "float", "boolean"}
)
DATETIME = DBAPITypeObject({"date", "time", "timestamp", "timetz", "timestamptz", "sec_interval", "month_interval"})
ROWID = DBAPITypeObject({"oid"})

Date = datetime.date
Time = datetime.time
Timestamp = datetime.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> datetime.date:
    return Date(*time.localtime(ticks)[:3])


def TimeFromTicks(ticks: float) -> datetime.time:
    return Time(*time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks: float) -> datetime.datetime:
    return Timestamp(*time.localtime(ticks)[:6])


# pymonetdb's names for the type codes of dates and times
DATE = "date"
TIME = "time"


def _local(value: datetime.time | datetime.datetime) -> datetime.time | datetime.datetime:
    offset = datetime.datetime.now().astimezone().utcoffset()
    return value.replace(tzinfo=datetime.timezone(offset or datetime.timedelta(0)))


def TimeTzFromTicks(ticks: float) -> datetime.time:
    """The local time of day of ``ticks``, with the local offset (pymonetdb's)."""
    return _local(TimeFromTicks(ticks))  # type: ignore[return-value]


def TimestampTzFromTicks(ticks: float) -> datetime.datetime:
    """The local date and time of ``ticks``, with the local offset (pymonetdb's)."""
    return _local(TimestampFromTicks(ticks))  # type: ignore[return-value]
