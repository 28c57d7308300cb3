"""The store: a DuckDB file, its schema, bulk ingest and the reads behind the map."""

from forgetmap.db.store import Store, StoreError, open_store

__all__ = ["Store", "StoreError", "open_store"]
