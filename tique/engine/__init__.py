"""Engine adapters: one interface (``Engine.connect() -> RawConnection``) over the embedded kernel and MAPI."""

from __future__ import annotations

from typing import Any

from tique.engine.base import Column, Engine, RawConnection, Result
from tique.engine.url import EngineURL, parse_url


def open_engine(url: str | EngineURL, **options: Any) -> Engine:
    """Open the engine a URL names. Options go to the adapter (``load_udf``, ``mapi_port`` for embedded)."""
    parsed = parse_url(url) if isinstance(url, str) else url
    if parsed.kind == "embedded":
        from tique.engine.embedded import EmbeddedEngine

        return EmbeddedEngine(parsed, **options)
    from tique.engine.server import ServerEngine

    return ServerEngine(parsed, **options)


__all__ = ["Column", "Engine", "EngineURL", "RawConnection", "Result", "open_engine", "parse_url"]
