"""State in a relational database through SQLAlchemy: SQLite by default, any SQLAlchemy URL works."""
