"""Reciprocal rank fusion of ranked candidate lists."""

from collections.abc import Hashable, Sequence


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[Hashable]], *, k: int = 60
) -> list[tuple[Hashable, float]]:
    """Fuse best-first rankings: each item scores sum(1 / (k + rank)), rank from 1.

    Returns (item, score) best first; ties keep the order in which items were
    first seen (earlier rankings, better ranks first), so results are stable.
    """
    scores: dict[Hashable, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])
