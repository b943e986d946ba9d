"""The declarative base, engine creation and schema versioning shared by all tables."""

from __future__ import annotations

from sqlalchemy import Engine, String, create_engine, event, inspect, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

SCHEMA_VERSION = 1


class Base(DeclarativeBase):
    pass


class SchemaInfo(Base):
    """One row: the schema version this database was last upgraded to."""

    __tablename__ = "schema_info"
    key: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[str] = mapped_column(String(64))


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets WAL and a busy timeout so the bot, scheduler and CLI can share it."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            # safe with WAL, and a claimed Slack event then costs ~1 ms instead of ~5
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


def upgrade(engine: Engine) -> int:
    """Create missing tables and apply additive migrations; never drops data. Returns the schema version.

    All table modules must be imported before this is called so their tables are registered on `Base`.
    """
    import threadwise.db.conversations  # noqa: F401  (registers tables)
    import threadwise.db.sync_tables  # noqa: F401

    Base.metadata.create_all(engine)
    _add_missing_columns(engine)
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


def make_sessions(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)
