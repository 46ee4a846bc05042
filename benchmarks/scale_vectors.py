"""Synthetic embeddings for benchmarks/scale.py, shaped like real sentence
embeddings, and the neighbour-distance profile that compares them with SciFact.

Real text embeddings are not points scattered evenly over a sphere: their
variance is spread over few directions (a decaying spectrum, so the local
intrinsic dimension is low), topics nest (field, subject, document, passage),
some topics are far tighter than others, and the chunks of one document sit
close together. Isotropic noise around a few thousand centroids in 384
dimensions has none of this: every point of a cluster is almost equidistant
from a query, so the "top 50" is a tie among hundreds, and no index (or exact
ranking that rounds) can agree on it.

VectorSpace draws every level from the same anisotropic Gaussian (standard
deviation of dimension i proportional to i^-1/2, in a fixed random order), with
spreads that vary log-normally per topic, subtopic and document, and
subtopics whose popularity is Zipf-like. `profile` measures what matters for
nearest-neighbour search (the distance to the k-th neighbour relative to the
first, and the local intrinsic dimension), and `benchmarks/scale.py --shape`
prints it beside SciFact's real MiniLM embeddings.
"""

from dataclasses import dataclass

import numpy as np

DIMENSIONS = 384
PROFILE_KS = (1, 2, 5, 10, 20, 50, 100)
# The passage's neighbours a query's offset is measured against.
OFFSET_KS = (1, 10)


class VectorSpace:
    """A hierarchy of topics, subtopics and documents in one anisotropic space;
    the same seed draws the same space, so a database grown over several runs
    keeps one geometry."""

    TOPICS = 200
    SUBTOPICS_PER_TOPIC = 10
    # Spreads of each level (a draw of the space has an expected norm of 1),
    # each multiplied per item by exp(SPREAD_SIGMA x a standard normal).
    SUBTOPIC_SPREAD = 0.8
    DOCUMENT_SPREAD = 0.5
    # A chunk's nearest sibling sits at a median 0.37 of its distance to the
    # nearest other document's chunk in SciFact's abstracts as ingestion
    # chunks them (1,000 abstracts, 1,000 characters; 0.27 at 300), 0.35 and
    # 0.30 here at the same chunk counts (siblings, scale.py --shape); 0.3
    # made documents clumps twice as tight (0.16 and 0.14).
    CHUNK_SPREAD = 0.5
    # How far a query is moved from its passage: SciFact's judged queries sit
    # at a median 1.13 times their passage's distance to its nearest other
    # abstract (1,000 abstracts, MiniLM; query_offsets, scale.py --shape);
    # 1.05 puts synthetic queries at 1.0-1.15 on samples of that size, 1.35
    # put them at 1.3-1.6.
    QUERY_SPREAD = 1.05
    SPREAD_SIGMA = 0.35
    SPECTRUM_DECAY = 1.0
    SUBTOPIC_POPULARITY = 0.5

    def __init__(self, seed: int, dimensions: int = DIMENSIONS):
        rng = np.random.default_rng(seed)
        self.dimensions = dimensions
        scale = np.arange(1, dimensions + 1, dtype=np.float64) ** (
            -self.SPECTRUM_DECAY / 2
        )
        scale /= np.linalg.norm(scale)
        rng.shuffle(scale)
        self._scale = scale.astype(np.float32)
        topics = self._draw(rng, self.TOPICS)
        parent = np.arange(self.TOPICS * self.SUBTOPICS_PER_TOPIC) // (
            self.SUBTOPICS_PER_TOPIC
        )
        spread = self.SUBTOPIC_SPREAD * self._spreads(rng, self.TOPICS)
        self._subtopics = topics[parent] + spread[parent, None] * self._draw(
            rng, len(parent)
        )
        self._subtopic_spread = self.DOCUMENT_SPREAD * self._spreads(rng, len(parent))
        popularity = 1.0 / np.arange(1, len(parent) + 1) ** self.SUBTOPIC_POPULARITY
        self._popularity = popularity / popularity.sum()

    def chunk_vectors(
        self, rng: np.random.Generator, documents: int, chunks_per_document: int
    ) -> np.ndarray:
        """Unit vectors of `documents` new documents' chunks, document by
        document (each document's chunks are consecutive rows)."""
        subtopic = rng.choice(len(self._subtopics), size=documents, p=self._popularity)
        centres = self._subtopics[subtopic] + self._subtopic_spread[
            subtopic, None
        ] * self._draw(rng, documents)
        spread = self.CHUNK_SPREAD * self._spreads(rng, documents)
        vectors = np.repeat(centres, chunks_per_document, axis=0)
        vectors += np.repeat(spread, chunks_per_document)[:, None] * self._draw(
            rng, documents * chunks_per_document
        )
        return _unit(vectors)

    def query_near(self, rng: np.random.Generator, vector) -> np.ndarray:
        """A query about the passage `vector`: the passage moved by a draw of
        the space (a question shares a passage's topic, not its wording)."""
        moved = np.asarray(vector, dtype=np.float32) + self.QUERY_SPREAD * self._draw(
            rng, 1
        )
        return _unit(moved)[0]

    def _draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return rng.standard_normal((count, self.dimensions)).astype(np.float32) * (
            self._scale
        )

    def _spreads(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return np.exp(self.SPREAD_SIGMA * rng.standard_normal(count)).astype(np.float32)


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@dataclass(frozen=True)
class Profile:
    """Nearest-neighbour distance structure of queries against a corpus."""

    corpus: int
    queries: int
    # Median cosine distance to the k-th neighbour, for k in PROFILE_KS.
    distances: tuple[float, ...]
    # Median local intrinsic dimension (maximum-likelihood estimate from the
    # 50 nearest distances; Levina and Bickel 2004).
    intrinsic_dimension: float
    # Median relative gap between the 50th and 51st neighbours: how sharply
    # the top 50 is defined.
    gap_at_50: float
    # Median cosine distance of two random corpus vectors.
    random_pair: float

    def line(self, label: str) -> str:
        first = self.distances[0]
        curve = " ".join(
            f"k{k} {d / first:.2f}"
            for k, d in zip(PROFILE_KS, self.distances, strict=True)
        )
        return (
            f"{label}: {self.corpus} vectors, {self.queries} queries; distance to "
            f"the k-th neighbour / the first: {curve}; first {first:.3f}, "
            f"50th {self.distances[PROFILE_KS.index(50)]:.3f}; local intrinsic "
            f"dimension {self.intrinsic_dimension:.1f}; 50th-51st gap "
            f"{100 * self.gap_at_50:.2f}%; random pair {self.random_pair:.3f}"
        )


def profile(corpus: np.ndarray, queries: np.ndarray, seed: int = 0) -> Profile:
    """The Profile of `queries` (unit vectors, none of them in `corpus`)
    against `corpus`, by exact search."""
    deepest = max(PROFILE_KS) + 1
    nearest = np.empty((len(queries), deepest), dtype=np.float32)
    for first in range(0, len(queries), 64):
        similarity = queries[first : first + 64] @ corpus.T
        top = np.partition(-similarity, deepest - 1, axis=1)[:, :deepest]
        nearest[first : first + 64] = np.sort(1.0 + top, axis=1)
    nearest = np.maximum(nearest, 1e-6)
    ratios = np.log(nearest[:, :50] / nearest[:, 49:50])
    dimension = -1.0 / np.minimum(ratios.mean(axis=1), -1e-9)
    gap = (nearest[:, 50] - nearest[:, 49]) / nearest[:, 49]
    rng = np.random.default_rng(seed)
    pairs = rng.integers(len(corpus), size=(2, 4000))
    random_pair = 1.0 - np.sum(corpus[pairs[0]] * corpus[pairs[1]], axis=1)
    median = np.median(nearest, axis=0)
    return Profile(
        corpus=len(corpus),
        queries=len(queries),
        distances=tuple(float(median[k - 1]) for k in PROFILE_KS),
        intrinsic_dimension=float(np.median(dimension)),
        gap_at_50=float(np.median(gap)),
        random_pair=float(np.median(random_pair)),
    )


@dataclass(frozen=True)
class Offsets:
    """How far queries sit from the passage they ask about, in units of that
    passage's own neighbourhood (scale-free: comparable between a real and a
    synthetic corpus of the same size)."""

    pairs: int
    # Quartiles (25th, 50th, 75th percentile) of the cosine distance from a
    # query to its passage divided by the passage's distance to its k-th
    # nearest other vector in the corpus, for k in OFFSET_KS.
    ratios: tuple[tuple[float, float, float], ...]
    # Quartiles of the passage's rank among the query's nearest corpus
    # vectors (1: the passage is the query's nearest).
    ranks: tuple[float, float, float]

    def line(self, label: str) -> str:
        ratios = "; ".join(
            f"/ its neighbour {k}: {q[1]:.2f} ({q[0]:.2f}-{q[2]:.2f})"
            for k, q in zip(OFFSET_KS, self.ratios, strict=True)
        )
        return (
            f"{label}: {self.pairs} query-passage pairs; distance from a query to "
            f"its passage, median (quartiles), {ratios}; the passage's rank among "
            f"the query's neighbours {self.ranks[1]:.0f} "
            f"({self.ranks[0]:.0f}-{self.ranks[2]:.0f})"
        )


def query_offsets(
    corpus: np.ndarray, queries: np.ndarray, passages: np.ndarray
) -> Offsets:
    """The Offsets of `queries` (unit vectors) from `corpus[passages[i]]`, the
    passage query i asks about (a query with several judged passages comes
    once per passage)."""
    passages = np.asarray(passages)
    deepest = max(OFFSET_KS)
    to_passage = np.empty(len(passages), dtype=np.float64)
    neighbours = np.empty((len(passages), deepest), dtype=np.float64)
    ranks = np.empty(len(passages), dtype=np.float64)
    for first in range(0, len(passages), 64):
        rows = slice(first, first + 64)
        own = passages[rows]
        every = np.arange(len(own))
        similarity = corpus[own] @ corpus.T
        similarity[every, own] = -np.inf
        top = np.partition(-similarity, deepest - 1, axis=1)[:, :deepest]
        neighbours[rows] = np.sort(1.0 + top, axis=1)
        # One product for both, so the passage never outranks itself by rounding.
        query_similarity = queries[rows] @ corpus.T
        mine = query_similarity[every, own]
        to_passage[rows] = 1.0 - mine
        ranks[rows] = 1 + np.sum(query_similarity > mine[:, None], axis=1)
    neighbours = np.maximum(neighbours, 1e-9)
    return Offsets(
        pairs=len(passages),
        ratios=tuple(_quartiles(to_passage / neighbours[:, k - 1]) for k in OFFSET_KS),
        ranks=_quartiles(ranks),
    )


def _quartiles(values: np.ndarray) -> tuple[float, float, float]:
    low, middle, high = np.percentile(values, [25, 50, 75])
    return float(low), float(middle), float(high)


@dataclass(frozen=True)
class Siblings:
    """How a document's chunks sit among the corpus: whether a chunk's nearest
    neighbours are its own document's other chunks (a tight clump the HNSW
    graph links mostly inside itself) or other documents' chunks."""

    chunks: int
    documents: int
    # Quartiles of a chunk's cosine distance to its nearest other chunk of
    # its own document divided by its distance to the nearest chunk of
    # another document (below 1: a sibling is closer than any other
    # document's chunk).
    ratio: tuple[float, float, float]
    # Mean share of a chunk's SIBLING_KS nearest neighbours that are its own
    # document's, over chunks with at least that many siblings (NaN if none).
    share: float
    # Mean number of siblings of the chunks measured.
    siblings: float

    def line(self, label: str) -> str:
        low, middle, high = self.ratio
        return (
            f"{label}: {self.chunks} chunks of {self.documents} documents "
            f"({self.siblings:.1f} siblings a chunk); nearest sibling / nearest "
            f"other document's chunk {middle:.2f} ({low:.2f}-{high:.2f}); share "
            f"of the {SIBLING_KS} nearest that are siblings {self.share:.2f}"
        )


SIBLING_KS = 10


def siblings(corpus: np.ndarray, documents: np.ndarray, sample: int = 2000) -> Siblings:
    """The Siblings of `corpus` (unit vectors) whose row i is a chunk of
    document `documents[i]`, measured on up to `sample` chunks that have a
    sibling, by exact search."""
    documents = np.asarray(documents)
    counts = np.bincount(documents)
    eligible = np.flatnonzero(counts[documents] > 1)
    rng = np.random.default_rng(0)
    picked = rng.choice(eligible, size=min(sample, len(eligible)), replace=False)
    ratios, shares = [], []
    for first in range(0, len(picked), 64):
        rows = picked[first : first + 64]
        distance = 1.0 - corpus[rows] @ corpus.T
        distance[np.arange(len(rows)), rows] = np.inf
        mine = documents[None, :] == documents[rows, None]
        sibling = np.where(mine, distance, np.inf).min(axis=1)
        other = np.where(mine, np.inf, distance).min(axis=1)
        ratios.extend(sibling / np.maximum(other, 1e-9))
        deepest = min(SIBLING_KS, len(corpus) - 1)
        nearest = np.argpartition(distance, deepest - 1, axis=1)[:, :deepest]
        full = counts[documents[rows]] - 1 >= deepest
        own = np.take_along_axis(mine, nearest, axis=1).mean(axis=1)
        shares.extend(own[full])
    return Siblings(
        chunks=len(corpus),
        documents=int(np.count_nonzero(counts)),
        ratio=_quartiles(np.asarray(ratios)),
        share=float(np.mean(shares)) if shares else float("nan"),
        siblings=float(np.mean(counts[documents[picked]] - 1)),
    )
