"""Engine, sessions and schema migrations of the app database (SQLite WAL by default, PostgreSQL by URL)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from chatbot.resources import migrations_dir

MIGRATIONS = migrations_dir()


def database_url(settings: Any) -> str:
    """The configured URL, else a SQLite file under data_dir."""
    if settings.store.url:
        return settings.store.url
    data_dir = Path(settings.paths.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{data_dir / 'chatbot.sqlite3'}"


def make_engine(url: str, sqlite_synchronous: str = "FULL") -> Engine:
    """An engine; SQLite gets WAL, foreign keys, a busy timeout and the chosen fsync level."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        sync = "FULL" if sqlite_synchronous.upper() == "FULL" else "NORMAL"

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record) -> None:  # pragma: no cover - exercised through every test
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA synchronous={sync}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def alembic_config(engine: Engine):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    return cfg


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (Alembic); a no-op when it is already there."""
    from alembic import command

    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def downgrade(engine: Engine, revision: str = "base") -> None:
    """Step the schema back to ``revision`` ("base" drops every table: for tests and rollbacks)."""
    from alembic import command

    cfg = alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


class Store:
    """The app database: an engine and a session factory. Repositories take a Store."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._factory = sessionmaker(engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A unit of work: commits on success (durably, before returning), rolls back on error."""
        with self._factory() as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def dispose(self) -> None:
        self.engine.dispose()


def open_store(settings: Any, url: str | None = None, run_migrations: bool = True) -> Store:
    """Open (and by default migrate) the configured database."""
    engine = make_engine(url or database_url(settings), settings.store.sqlite_synchronous)
    if run_migrations:
        migrate(engine)
    return Store(engine)
