"""The query-offset profile that benchmarks/scale.py --shape prints, and that
QUERY_SPREAD is set from."""

import numpy as np
import pytest

from benchmarks.scale_vectors import OFFSET_KS, VectorSpace, query_offsets


def on_circle(degrees) -> np.ndarray:
    radians = np.radians(np.asarray(degrees, dtype=np.float64))
    return np.stack([np.cos(radians), np.sin(radians)], axis=1)


def distance(degrees: float) -> float:
    return 1.0 - np.cos(np.radians(degrees))


# The passage (row 0) at 0 degrees, its neighbours 10, 20, ... 150 degrees away.
CORPUS = on_circle([0, *range(10, 160, 10)])


def test_a_query_on_its_passage_is_at_distance_zero_and_ranks_it_first():
    offsets = query_offsets(CORPUS, CORPUS[[0]], np.array([0]))

    assert offsets.pairs == 1
    assert offsets.ratios[0][1] == pytest.approx(0.0, abs=1e-9)
    assert offsets.ranks == (1.0, 1.0, 1.0)


def test_the_distance_is_measured_in_the_passage_s_own_neighbour_distances():
    offsets = query_offsets(CORPUS, on_circle([-5]), np.array([0]))

    first, tenth = (offsets.ratios[OFFSET_KS.index(k)][1] for k in (1, 10))
    assert first == pytest.approx(distance(5) / distance(10))
    assert tenth == pytest.approx(distance(5) / distance(100))


def test_the_rank_counts_the_corpus_vectors_nearer_the_query_than_its_passage():
    # 28 degrees from the passage: the vectors at 10 to 50 degrees are nearer.
    offsets = query_offsets(CORPUS, on_circle([28]), np.array([0]))

    assert offsets.ranks[1] == 6.0
    assert offsets.ratios[0][1] > 1.0


def test_each_query_is_measured_against_its_own_passage():
    # Query 0 sits on its passage (row 3), query 1 is 5 degrees from row 0.
    offsets = query_offsets(CORPUS, on_circle([30, -5]), np.array([3, 0]))

    assert offsets.pairs == 2
    assert offsets.ranks[0] == 1.0
    assert offsets.ratios[0][0] == pytest.approx(0.25 * distance(5) / distance(10))


def test_synthetic_queries_move_further_from_their_passage_with_query_spread():
    medians = []
    for spread in (0.5, 1.0, 1.5):
        space = VectorSpace(7, 64)
        space.QUERY_SPREAD = spread
        rng = np.random.default_rng(1)
        corpus = space.chunk_vectors(rng, 50, 20)
        passages = rng.choice(len(corpus), size=100, replace=False)
        queries = np.stack([space.query_near(rng, corpus[i]) for i in passages])
        medians.append(query_offsets(corpus, queries, passages).ratios[0][1])

    assert medians == sorted(medians)
    assert medians[0] < medians[-1] / 2


def test_siblings_measure_a_chunk_s_own_document_against_the_nearest_other():
    from benchmarks.scale_vectors import siblings

    # Two documents of two chunks: 0 and 10 degrees, then 40 and 60.
    corpus = on_circle([0, 10, 40, 60])
    measured = siblings(corpus, np.array([0, 0, 1, 1]))

    assert measured.documents == 2 and measured.siblings == 1.0
    ratios = sorted(
        [distance(10) / distance(30), distance(10) / distance(40)]
        + [distance(20) / distance(30), distance(20) / distance(60 - 10)]
    )
    assert measured.ratio[1] == pytest.approx(np.median(ratios))


def test_a_chunk_without_siblings_is_not_measured():
    from benchmarks.scale_vectors import siblings

    measured = siblings(on_circle([0, 10, 90]), np.array([0, 0, 1]))

    # Rows 0 and 1 only: each other's sibling, 90 and 80 degrees from row 2.
    assert measured.siblings == 1.0
    low, _, high = measured.ratio
    assert low >= distance(10) / distance(90) - 1e-9
    assert high <= distance(10) / distance(80) + 1e-9
    assert np.isnan(measured.share)  # no chunk has two siblings
