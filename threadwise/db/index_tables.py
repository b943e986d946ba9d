"""The index manifest's tables: what each evidence collection holds, kept in the shared database so that every
replica answers from the same generation (threadwise/index/manifest.py reads and writes them)."""

from __future__ import annotations

from sqlalchemy import Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from threadwise.db.base import Base


class IndexCollectionRow(Base):
    """One evidence collection: the embedder that built its vectors, and its generation (moved on by every
    switch; readers reload BM25 and reopen Chroma when it moves)."""

    __tablename__ = "index_collections"
    collection: Mapped[str] = mapped_column(String(128), primary_key=True)
    embedder: Mapped[str] = mapped_column(String(255))
    generation: Mapped[int] = mapped_column(Integer, default=0)


class IndexPageRow(Base):
    """An indexed page: the one record of its version, content hash and title (synced_pages keeps only the
    breadcrumb beside it)."""

    __tablename__ = "index_pages"
    __table_args__ = (Index("ix_index_pages_space", "collection", "space"),)
    collection: Mapped[str] = mapped_column(String(128), primary_key=True)
    page_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    space: Mapped[str] = mapped_column(String(255))
    version: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(String(128))
    title: Mapped[str] = mapped_column(Text)  # a folder's page JSON may carry any length
    evidence_count: Mapped[int] = mapped_column(Integer)


class IndexDirtyRow(Base):
    """A page whose update is in progress (or was killed midway): `flush` sweeps its leftover Chroma rows."""

    __tablename__ = "index_dirty"
    collection: Mapped[str] = mapped_column(String(128), primary_key=True)
    page_id: Mapped[str] = mapped_column(String(255), primary_key=True)
