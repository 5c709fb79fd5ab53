"""Deterministic query split shared by training and evaluation: never train on what we evaluate.

A query's split depends only on its id, so MEDIQA and its Italian translation (same ids) agree.
"""

from __future__ import annotations

import hashlib

TRAIN_SHARE = 6  # out of 10 buckets


def split_of(query_id: str) -> str:
    """'train' for about 60% of query ids, 'test' for the rest."""
    bucket = int(hashlib.sha1(str(query_id).encode("utf-8")).hexdigest(), 16) % 10
    return "train" if bucket < TRAIN_SHARE else "test"
