"""The physical Storage and Cache tables behind a tique table, for tests that read or write them directly."""

from __future__ import annotations

from tique.catalog import table_info
from tique.engine.base import RawConnection


def storage(raw: RawConnection, table: str, schema: str = "sys") -> str:
    """T's Storage table, schema-qualified and quoted."""
    return table_info(raw, schema, table).storage


def cache(raw: RawConnection, table: str, schema: str = "sys") -> str:
    """T's Cache table, schema-qualified and quoted."""
    return table_info(raw, schema, table).cache
