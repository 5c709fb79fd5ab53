"""The query split lives in ``chatbot.splits`` (training imports it from there); re-exported for benchmarks."""

from chatbot.splits import TRAIN_SHARE, split_of

__all__ = ["TRAIN_SHARE", "split_of"]
