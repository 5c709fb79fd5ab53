"""`chatbot users add` and `chatbot tokens create|list|revoke`: clinician/evaluator/admin accounts and the
API's tokens."""

from __future__ import annotations

import argparse
import json
import sys


def cmd_users_add(args: argparse.Namespace) -> int:
    import getpass

    from chatbot.settings import load_settings
    from chatbot.store.auth import add_user
    from chatbot.store.db import open_store

    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass(f"password for {args.username}: ")
        if getpass.getpass("again: ") != password:
            print("error: the passwords differ", file=sys.stderr)
            return 2
    try:
        uid = add_user(open_store(load_settings()), args.username, password, args.role)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"id": uid, "username": args.username, "role": args.role}))
    return 0


def cmd_tokens(args: argparse.Namespace) -> int:
    from chatbot.settings import load_settings
    from chatbot.store import tokens
    from chatbot.store.db import open_store

    store = open_store(load_settings())
    if args.tokens_command == "create":
        try:
            token = tokens.create_token(store, args.name, args.rate_per_minute)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        # shown once: only its SHA-256 is stored
        print(json.dumps({"name": args.name, "rate_per_minute": args.rate_per_minute, "token": token}))
        return 0
    if args.tokens_command == "revoke":
        if not tokens.revoke_token(store, args.name):
            print(f"error: no active token {args.name!r}", file=sys.stderr)
            return 2
        print(json.dumps({"name": args.name, "revoked": True}))
        return 0
    print(json.dumps(tokens.list_tokens(store), indent=2))
    return 0


def add_cli(sub: argparse._SubParsersAction) -> None:
    """Register ``chatbot tokens create|list|revoke`` and ``chatbot users add`` on the CLI's subparsers."""
    p = sub.add_parser("tokens", help="API tokens for /api/v1 (created and revoked by an admin)")
    tsub = p.add_subparsers(dest="tokens_command", required=True)
    t = tsub.add_parser("create", help="a new token (printed once; only its SHA-256 is stored)")
    t.add_argument("name")
    t.add_argument("--rate-per-minute", type=int, default=60, help="calls a minute, shared by all replicas")
    t.set_defaults(func=cmd_tokens)
    t = tsub.add_parser("list", help="tokens, limits, calls in the last minute")
    t.set_defaults(func=cmd_tokens)
    t = tsub.add_parser("revoke", help="revoke a token by name")
    t.add_argument("name")
    t.set_defaults(func=cmd_tokens)

    p = sub.add_parser("users", help="manage clinician, evaluator and admin accounts")
    usub = p.add_subparsers(dest="users_command", required=True)
    u = usub.add_parser("add", help="add a user (password prompted, or one line on stdin)")
    u.add_argument("username")
    u.add_argument("--role", required=True, choices=["clinician", "evaluator", "admin", "editor"])
    u.add_argument("--password-stdin", action="store_true", help="read the password from the first stdin line")
    u.set_defaults(func=cmd_users_add)
