"""Users, hashed passwords (scrypt), login sessions with expiry, login rate limiting, audit log."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from chatbot.store.db import Store
from chatbot.store.models import ROLES, AuditLog, AuthSession, LoginAttempt, User, utcnow

# scrypt cost: 2**14 x 8 x 1 = 16 MiB and ~50 ms per hash; stored with the hash so it can be raised later.
_N, _R, _P = 2**14, 8, 1
MIN_PASSWORD_CHARS = 8
SESSION_TOUCH_EVERY = timedelta(seconds=60)  # last_seen is written at most once a minute per session


@dataclass(frozen=True)
class Principal:
    """Who is calling: a logged-in user and their role."""

    id: int
    username: str
    role: str

    def can(self, *roles: str) -> bool:
        return self.role in roles


class LoginRateLimited(Exception):
    """Too many failed logins for this username or client address in the window."""


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=_N, r=_R, p=_P, dklen=32)
    b64 = base64.b64encode
    return f"scrypt${_N}${_R}${_P}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        want = base64.b64decode(digest)
        got = hashlib.scrypt(
            password.encode("utf-8"), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=len(want)
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, want)


_DUMMY_HASH = hash_password(secrets.token_hex(8))


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def audit(
    session: Session,
    who: Principal | None,
    action: str,
    target_type: str | None = None,
    target_id: Any = None,
    detail: dict[str, Any] | None = None,
    username: str | None = None,
) -> None:
    """Append one audit record (in the caller's transaction: the action and its record commit together)."""
    session.add(
        AuditLog(
            user_id=who.id if who else None,
            username=who.username if who else (username or "anonymous"),
            action=action,
            target_type=target_type,
            target_id=None if target_id is None else str(target_id),
            detail=detail or {},
        )
    )


def add_user(store: Store, username: str, password: str, role: str, by: Principal | None = None) -> int:
    username = username.strip()
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    if not username or len(username) > 80 or any(c.isspace() for c in username):
        raise ValueError("a username is 1-80 characters without spaces")
    if len(password) < MIN_PASSWORD_CHARS:
        raise ValueError(f"a password needs at least {MIN_PASSWORD_CHARS} characters")
    with store.session() as s:
        if s.scalar(select(User.id).where(User.username == username)) is not None:
            raise ValueError(f"user {username!r} already exists")
        user = User(username=username, password_hash=hash_password(password), role=role)
        s.add(user)
        s.flush()
        audit(s, by, "user_add", "user", user.id, {"username": username, "role": role}, username="cli")
        return user.id


def login_backoff_s(account_failures: int, max_failures: int) -> float:
    """Seconds an attempt on an account waits after ``account_failures`` recent failures from any address:
    none up to the limit, then 0.5 s doubling per further failure, at most 4 s."""
    if account_failures < max_failures:
        return 0.0
    return min(0.5 * 2 ** (account_failures - max_failures), 4.0)


def login(store: Store, username: str, password: str, client: str, server: Any) -> tuple[str, Principal] | None:
    """A new session token for correct credentials, None for wrong ones; LoginRateLimited when throttled.

    Throttling is per client address: an address with login_max_failures failures in the window is refused
    (whatever account it tries). An account's failures from other addresses never lock it: past the limit
    each attempt on it only waits a back-off (``login_backoff_s``), so an outsider cannot lock a clinician
    out, and guessing from many addresses stays slow."""
    username = (username or "").strip()[:80]
    client = (client or "unknown")[:64]
    since = utcnow() - timedelta(seconds=server.login_window_s)
    with store.session() as s:
        recent = select(func.count(LoginAttempt.id)).where(LoginAttempt.at >= since)
        from_client = s.scalar(recent.where(LoginAttempt.client == client))
        on_account = s.scalar(recent.where(LoginAttempt.username == username))
        throttled = from_client >= server.login_max_failures
        if throttled:  # recorded (committed) before refusing
            audit(s, None, "login_throttled", "user", None, {"username": username, "client": client}, username)
    if throttled:
        raise LoginRateLimited(f"too many failed logins; try again in {max(1, server.login_window_s // 60)} min")
    time.sleep(login_backoff_s(on_account, server.login_max_failures))
    with store.session() as s:
        user = s.scalar(select(User).where(User.username == username))
        ok = verify_password(password or "", user.password_hash if user else _DUMMY_HASH)
        if not ok or user is None or user.disabled:
            s.add(LoginAttempt(username=username, client=client))
            audit(s, None, "login_failed", "user", None, {"username": username, "client": client}, username)
            return None
        s.execute(delete(LoginAttempt).where(LoginAttempt.username == username, LoginAttempt.client == client))
        token = secrets.token_urlsafe(32)
        now = utcnow()
        s.add(
            AuthSession(
                token_hash=_token_hash(token),
                user_id=user.id,
                created_at=now,
                last_seen=now,
                expires_at=now + timedelta(hours=server.session_max_hours),
            )
        )
        who = Principal(user.id, user.username, user.role)
        audit(s, who, "login", "user", user.id, {"client": client})
        return token, who


def session_principal(store: Store, token: str | None, server: Any) -> Principal | None:
    """The user behind a session cookie, or None when absent, unknown, expired (idle or absolute) or disabled."""
    if not token or len(token) > 200:
        return None
    now = utcnow()
    with store.session() as s:
        row = s.get(AuthSession, _token_hash(token))
        if row is None:
            return None
        idle_limit = row.last_seen + timedelta(minutes=server.session_idle_minutes)
        if now >= row.expires_at or now >= idle_limit or row.user.disabled:
            s.delete(row)
            return None
        if now - row.last_seen >= SESSION_TOUCH_EVERY:
            row.last_seen = now
        return Principal(row.user.id, row.user.username, row.user.role)


def logout(store: Store, token: str | None) -> None:
    if not token:
        return
    with store.session() as s:
        row = s.get(AuthSession, _token_hash(token))
        if row is not None:
            audit(s, Principal(row.user.id, row.user.username, row.user.role), "logout", "user", row.user_id)
            s.delete(row)


def prune_auth(store: Store, server: Any) -> None:
    """Drop expired sessions and login failures older than the window."""
    now = utcnow()
    with store.session() as s:
        s.execute(delete(AuthSession).where(AuthSession.expires_at < now))
        s.execute(delete(LoginAttempt).where(LoginAttempt.at < now - timedelta(seconds=server.login_window_s)))


def audit_action(store: Store, who: Principal | None, action: str, target_type=None, target_id=None, detail=None):
    with store.session() as s:
        audit(s, who, action, target_type, target_id, detail)


def audit_entries(store: Store, limit: int = 200) -> list[dict[str, Any]]:
    with store.session() as s:
        rows = s.scalars(select(AuditLog).order_by(AuditLog.id.desc()).limit(limit))
        return [
            {
                "id": r.id,
                "at": r.at.isoformat(timespec="seconds"),
                "user": r.username,
                "action": r.action,
                "target": f"{r.target_type or ''} {r.target_id or ''}".strip(),
                "detail": r.detail,
            }
            for r in rows
        ]
