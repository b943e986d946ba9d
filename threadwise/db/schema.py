"""Schema upgrades: create missing tables and add missing columns; never drop stored data.

The one exception are columns that only held copies of what another store now keeps once
(`RETIRED_COLUMNS`): they are dropped, since an old NOT NULL copy would refuse every new row.
"""

from __future__ import annotations

from sqlalchemy import Engine, String, inspect, text
from sqlalchemy.orm import Session

import threadwise.db.channel_tables  # noqa: F401  (importing a table module registers its tables on Base)
import threadwise.db.conversations  # noqa: F401
import threadwise.db.index_tables  # noqa: F401
import threadwise.db.leases  # noqa: F401
import threadwise.db.permission_tables  # noqa: F401
import threadwise.db.sync_tables  # noqa: F401
from threadwise.db.base import SCHEMA_VERSION, Base, SchemaInfo

# table -> columns a newer release no longer writes, because their data is kept elsewhere
RETIRED_COLUMNS = {
    "synced_pages": ("title", "version"),  # the index's manifest holds each page's title and version
}


def upgrade(engine: Engine) -> int:
    """Create missing tables and apply additive migrations; never drops data. Returns the schema version."""
    Base.metadata.create_all(engine)
    _add_missing_columns(engine)
    _add_missing_indexes(engine)
    _widen_strings(engine)
    _drop_retired_columns(engine)
    with Session(engine) as s, s.begin():
        row = s.get(SchemaInfo, "version")
        if row is None:
            s.add(SchemaInfo(key="version", value=str(SCHEMA_VERSION)))
        elif int(row.value) < SCHEMA_VERSION:
            row.value = str(SCHEMA_VERSION)
    return SCHEMA_VERSION


def _add_missing_columns(engine: Engine) -> None:
    """Additive migration: a column that a newer release added to a model is added to the old table, nullable."""
    insp = inspect(engine)
    for table in Base.metadata.sorted_tables:
        if not insp.has_table(table.name):
            continue
        have = {c["name"] for c in insp.get_columns(table.name)}
        for col in table.columns:
            if col.name not in have:
                ddl = f'ALTER TABLE {table.name} ADD COLUMN "{col.name}" {col.type.compile(engine.dialect)}'
                with engine.begin() as conn:
                    conn.execute(text(ddl))


def _add_missing_indexes(engine: Engine) -> None:
    """An index that a newer release declared on an old table is created (create_all makes only new tables')."""
    for table in Base.metadata.sorted_tables:
        for index in table.indexes:
            index.create(engine, checkfirst=True)


def _widen_strings(engine: Engine) -> None:
    """A string column that a newer release made longer is widened in place on PostgreSQL, which enforces
    VARCHAR lengths (SQLite ignores them). Widening keeps every value."""
    if engine.dialect.name != "postgresql":
        return
    insp = inspect(engine)
    for table in Base.metadata.sorted_tables:
        if not insp.has_table(table.name):
            continue
        lengths = {c["name"]: getattr(c["type"], "length", None) for c in insp.get_columns(table.name)}
        for col in table.columns:
            want, have = getattr(col.type, "length", None), lengths.get(col.name)
            if isinstance(col.type, String) and have and (want is None or have < want):
                wider = "TEXT" if want is None else f"VARCHAR({want})"  # Text: no length at all
                with engine.begin() as conn:
                    conn.execute(text(f'ALTER TABLE {table.name} ALTER COLUMN "{col.name}" TYPE {wider}'))


def _drop_retired_columns(engine: Engine) -> None:
    insp = inspect(engine)
    for table, columns in RETIRED_COLUMNS.items():
        if not insp.has_table(table):
            continue
        have = {c["name"] for c in insp.get_columns(table)}
        for column in columns:
            if column in have:
                with engine.begin() as conn:
                    conn.execute(text(f'ALTER TABLE {table} DROP COLUMN "{column}"'))
