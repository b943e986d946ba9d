"""The declarative base and engine creation shared by all tables (upgrades: `threadwise.db.schema`)."""

from __future__ import annotations

from sqlalchemy import Engine, String, create_engine, event
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
    """An engine for `url`; SQLite gets WAL and a busy timeout so the bot, scheduler and CLI can share it.
    PostgreSQL (`postgresql://…`, psycopg 3 from the `postgres` extra) is what several replicas share."""
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
    try:
        return create_engine(url, pool_pre_ping=True)
    except ModuleNotFoundError as err:  # the URL's driver (psycopg for postgresql://) is not installed
        extra = " (pip install 'threadwise[postgres]')" if url.startswith("postgres") else ""
        raise RuntimeError(f"THREADWISE_DATABASE_URL needs the {err.name} driver{extra}") from err


def make_sessions(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)
