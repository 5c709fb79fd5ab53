"""JSON API: tokens (hashed), per-call audit rows (no question text), conversation ownership

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("rate_per_minute", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("name", name=op.f("uq_api_tokens_name")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    op.create_table(
        "api_calls",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("route", sa.String(length=64), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("trace_id", sa.String(length=36), nullable=True),
        sa.Column("conversation_id", sa.String(length=36), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["token_id"], ["api_tokens.id"], name=op.f("fk_api_calls_token_id_api_tokens"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_calls")),
    )
    op.create_index(op.f("ix_api_calls_at"), "api_calls", ["at"], unique=False)
    op.create_index("ix_api_calls_token_at", "api_calls", ["token_id", "at"], unique=False)
    op.create_table(
        "api_conversations",
        sa.Column("conversation_id", sa.String(length=36), nullable=False),
        sa.Column("token_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_api_conversations_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["token_id"], ["api_tokens.id"], name=op.f("fk_api_conversations_token_id_api_tokens"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("conversation_id", name=op.f("pk_api_conversations")),
    )
    op.create_index(op.f("ix_api_conversations_token_id"), "api_conversations", ["token_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_api_conversations_token_id"), table_name="api_conversations")
    op.drop_table("api_conversations")
    op.drop_index("ix_api_calls_token_at", table_name="api_calls")
    op.drop_index(op.f("ix_api_calls_at"), table_name="api_calls")
    op.drop_table("api_calls")
    op.drop_table("api_tokens")
