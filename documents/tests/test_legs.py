"""The vector leg's choice between an exact ranking and an iterative HNSW scan,
made from how many chunks a filter keeps."""

import logging

import numpy as np
import pytest
from django.db import connection

from documents.filters import compile_filter
from documents.models import Channel, Chunk, Document
from documents.search import legs
from documents.search.legs import VectorPlan, VectorStrategy, plan_vector_leg
from documents.search.service import retrieve_chunks
from documents.tests.corpus import add_document

TEAM = [{"name": "team", "type": "string", "filterable": True}]


@pytest.fixture
def teams(make_channel, fake_embedder, settings):
    """200 documents of two chunks: 10 "rare" (20 chunks), 50 "quarter"
    (100 chunks), the rest "common". With 60 candidates and a visit worth 0.1
    exact rows, scopes up to sqrt(0.1 x 60 x 400) = 48 chunks are exact."""
    settings.SEARCH_EXACT_ROWS_PER_VISIT = 0.1
    channel = make_channel(
        slug="teams",
        fields=TEAM,
        retriever_mode=Channel.RetrieverMode.VECTOR,
        retriever_candidates=60,
    )
    for index in range(200):
        if index % 20 == 0:
            team = "rare"
        elif index % 4 == 1:
            team = "quarter"
        else:
            team = "common"
        add_document(
            channel,
            title=f"doc {index}",
            pages=[[f"policy {index} on topic {index % 7}", f"appendix {index % 11}"]],
            metadata={"team": team},
        )
    return channel


def _prefer_indexes() -> None:
    # On a small table PostgreSQL would sort everything; push it onto the HNSW
    # index wherever a statement lets it, so a plan that can walk it does.
    with connection.cursor() as cursor:
        cursor.execute(
            "SET enable_seqscan = off; SET enable_bitmapscan = off; "
            "SET enable_sort = off"
        )


def _scope(channel: Channel, metadata_filter: dict | None) -> legs.Scope:
    condition = compile_filter(channel, metadata_filter)
    documents = Document.objects.for_channel(channel).ready().filter(condition)
    return legs.Scope(channel, documents, restricted=bool(condition))


def _exact(channel: Channel, team: str, vector: list[float], k: int) -> list[float]:
    """The k best cosine similarities of the team's chunks, by a full sort."""
    query = np.asarray(vector) / np.linalg.norm(vector)
    chunks = Chunk.objects.filter(channel=channel, document__metadata__team=team)
    similarities = sorted(
        (
            float(np.dot(c.embedding, query) / np.linalg.norm(c.embedding))
            for c in chunks
        ),
        reverse=True,
    )
    return similarities[:k]


def _strategies(caplog) -> list[str]:
    return [
        record.args[0]
        for record in caplog.records
        if record.name == "documents.search.service"
        and record.msg.startswith("vector leg")
    ]


def test_a_narrow_filter_returns_the_exact_nearest_chunks(teams, fake_embedder, caplog):
    """A filter keeping few enough chunks ranks them exactly: the k nearest
    by cosine, as a full sort finds them, even when PostgreSQL is pushed onto
    the HNSW index."""
    _prefer_indexes()
    caplog.set_level(logging.DEBUG, logger="documents.search.service")
    results = retrieve_chunks(
        teams, "policy topic 3", metadata_filter={"team": "rare"}, limit=15
    )
    vector = fake_embedder.embed_query("policy topic 3")
    # Compared by similarity: equally near chunks may come in either order.
    expected = _exact(teams, "rare", vector, 15)
    assert [r.score for r in results] == pytest.approx(expected, abs=1e-6)
    assert {r.metadata["team"] for r in results} == {"rare"}
    assert _strategies(caplog) == [VectorStrategy.EXACT]


def test_a_broad_filter_walks_the_index_and_returns_every_result_asked(teams, caplog):
    """A filter keeping more chunks than the threshold is searched by an
    iterative HNSW scan that itself returns the candidates asked for: an
    ef_search of 100 alone would find about 25 "quarter" chunks of the 60
    candidates, and the leg would fall back to an exact ranking."""
    _prefer_indexes()
    caplog.set_level(logging.DEBUG, logger="documents.search.service")
    results = retrieve_chunks(
        teams, "appendix policy", metadata_filter={"team": "quarter"}, limit=50
    )
    assert len(results) == 50
    assert {r.metadata["team"] for r in results} == {"quarter"}
    assert _strategies(caplog) == [VectorStrategy.HNSW]


def test_the_exact_plan_cannot_use_the_hnsw_index_and_the_walk_does(
    teams, fake_embedder
):
    """EXPLAIN of each plan's statement: the exact one ranks the filter's rows
    without the HNSW index even when every other scan is disabled; the walk's
    is an index scan of chunk_embedding_hnsw."""
    _prefer_indexes()
    vector = fake_embedder.embed_query("policy")
    model = fake_embedder.model_name
    plans = {
        "rare": plan_vector_leg(_scope(teams, {"team": "rare"}), 60),
        "quarter": plan_vector_leg(_scope(teams, {"team": "quarter"}), 60),
    }
    assert plans["rare"].exact and not plans["quarter"].exact
    explained = {}
    for team, plan in plans.items():
        scope = _scope(teams, {"team": team})
        hnsw, select, params = legs.vector_statement(scope, vector, model, 60, plan)
        with connection.cursor() as cursor:
            for setting in hnsw:
                cursor.execute(setting)
            cursor.execute("EXPLAIN " + select, params)
            explained[team] = "\n".join(row[0] for row in cursor.fetchall())
    assert "chunk_embedding_hnsw" not in explained["rare"]
    assert "Index Scan using chunk_embedding_hnsw" in explained["quarter"]


def test_an_unfiltered_search_is_planned_by_the_channel_size(teams, caplog, settings):
    """Without a filter the scope is the whole channel (400 chunks): walked
    while a visit is worth 0.1 exact rows, ranked exactly at 10 (400² is
    within 10 x 60 x 400)."""
    caplog.set_level(logging.DEBUG, logger="documents.search.service")
    assert _scope(teams, None).size == 400
    retrieve_chunks(teams, "policy")
    settings.SEARCH_EXACT_ROWS_PER_VISIT = 10
    retrieve_chunks(teams, "policy")
    assert _strategies(caplog) == [VectorStrategy.HNSW, VectorStrategy.EXACT]


def test_the_walk_may_visit_more_rows_the_fewer_pass_the_filter(wiki_sizes):
    """max_scan_tuples is the rows expected before `candidates` pass the filter
    (candidates / share kept), four times over, within [20,000, 500,000]."""
    channel_size, plans = wiki_sizes
    assert plans[channel_size].max_scan_tuples == legs.MIN_SCAN_TUPLES
    assert plans[channel_size // 100].max_scan_tuples == 100 * 100 * 4
    assert plans[channel_size // 10_000].max_scan_tuples == legs.MAX_SCAN_TUPLES


def test_the_exact_threshold_grows_with_the_square_root_of_the_channel(settings):
    """With a visit worth 5 exact rows and 100 candidates, a 1M-chunk channel
    ranks scopes of up to sqrt(5 x 100 x 1M) = 22,360 chunks exactly, a 100M
    one up to 223,606; 0 walks every scope."""
    settings.SEARCH_EXACT_ROWS_PER_VISIT = 5
    scope = legs.Scope(None, Document.objects.none(), restricted=True)
    for channel_size, largest in ((1_000_000, 22_360), (100_000_000, 223_606)):
        scope.channel_size = channel_size
        scope.size = largest
        assert plan_vector_leg(scope, 100) == VectorPlan(exact=True)
        scope.size = largest + 1
        assert not plan_vector_leg(scope, 100).exact
    settings.SEARCH_EXACT_ROWS_PER_VISIT = 0
    scope.size = 1
    assert not plan_vector_leg(scope, 100).exact


def test_the_walk_searches_at_least_walk_ef_search_and_at_most_1000():
    """ef_search is WALK_EF_SEARCH for the usual candidates, the candidates
    when more are asked for, and never past pgvector's maximum of 1000."""

    def ef_search(candidates):
        (setting,) = [
            s for s in legs._hnsw_settings(candidates, 20_000) if "ef_search" in s
        ]
        return int(setting.rsplit(" ", 1)[1])

    assert ef_search(10) == ef_search(100) == legs.WALK_EF_SEARCH == 100
    assert ef_search(600) == 600
    assert ef_search(5_000) == 1000


def test_the_chunk_vectors_graph_is_built_as_the_model_declares(db):
    """The HNSW index in the database has the links per node and build
    candidates of the model's definition (migration 0021 rebuilt it at 32/128
    from 16/64)."""
    (index,) = [i for i in Chunk._meta.indexes if i.name == "chunk_embedding_hnsw"]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reloptions FROM pg_class WHERE relname = 'chunk_embedding_hnsw'"
        )
        (options,) = cursor.fetchone()
    assert sorted(options) == sorted(
        [f"m={index.m}", f"ef_construction={index.ef_construction}"]
    )
    assert (index.m, index.ef_construction) == (32, 128)


@pytest.fixture
def wiki_sizes(db, settings):
    """Plans for 100 candidates at scopes of 1M chunks down to 100 of them."""
    settings.SEARCH_EXACT_ROWS_PER_VISIT = 0
    channel_size = 1_000_000
    plans = {}
    for size in (channel_size, channel_size // 100, channel_size // 10_000):
        scope = legs.Scope(None, Document.objects.none(), restricted=True)
        scope.channel_size = channel_size
        scope.size = size
        plans[size] = plan_vector_leg(scope, 100)
    return channel_size, plans
