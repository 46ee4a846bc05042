import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from pgvector.django import CosineDistance

from documents.filters import FilterError
from documents.models import Channel, Chunk, Document
from documents.results import RetrievedChunk
from documents.search import legs
from documents.search.fusion import reciprocal_rank_fusion
from documents.search.service import retrieve_chunks
from documents.tests.corpus import add_document

FIELDS = [
    {"name": "team", "type": "string", "filterable": True},
    {"name": "year", "type": "number", "filterable": True},
    {"name": "region", "type": "string", "sent_with_chunks": True},
]


@pytest.fixture
def wiki(make_channel, fake_embedder):
    channel = make_channel(fields=FIELDS)
    add_document(
        channel,
        title="Onboarding",
        pages=[
            "New employees receive a laptop and a badge on their first day.",
            "The cafeteria serves lunch from noon until two.",
        ],
        metadata={"team": "hr", "year": 2023, "region": "eu"},
    )
    add_document(
        channel,
        title="Expenses",
        pages=["Travel expenses are reimbursed within thirty days of the claim."],
        metadata={"team": "finance", "year": 2024, "region": "us"},
    )
    add_document(
        channel,
        title="Security",
        pages=["Report a lost laptop or badge to the security desk at once."],
        metadata={"team": "it", "year": 2024, "region": "eu"},
    )
    return channel


def test_hybrid_retrieval_finds_the_relevant_chunk_first(wiki):
    """The chunk that answers comes first, with its document, page and score."""
    results = retrieve_chunks(wiki, "when are travel expenses reimbursed")
    assert isinstance(results[0], RetrievedChunk)
    assert results[0].document_title == "Expenses"
    assert results[0].page_number == 1
    assert "reimbursed" in results[0].text
    assert results[0].score > 0
    assert [r.score for r in results] == sorted(
        (r.score for r in results), reverse=True
    )


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_each_mode_ranks_the_matching_chunk_first(wiki, mode):
    """Keyword-only, vector-only and hybrid all find an exact topical match."""
    wiki.retriever_mode = mode
    results = retrieve_chunks(wiki, "cafeteria lunch")
    assert results[0].text.startswith("The cafeteria")


def test_metadata_shows_marked_fields_or_everything(wiki):
    """Chunk metadata holds the fields marked sent_with_chunks, or all
    the document's metadata when none is marked."""
    result = retrieve_chunks(wiki, "travel expenses")[0]
    assert result.metadata == {"region": "us"}
    wiki.metadata_fields.update(sent_with_chunks=False)
    result = retrieve_chunks(wiki, "travel expenses")[0]
    assert result.metadata == {"team": "finance", "year": 2024, "region": "us"}


def test_filter_restricts_results(wiki):
    """A metadata filter keeps only matching documents' chunks."""
    results = retrieve_chunks(wiki, "laptop badge", metadata_filter={"team": "it"})
    assert {r.document_title for r in results} == {"Security"}
    results = retrieve_chunks(wiki, "laptop", metadata_filter={"year": {"max": 2023}})
    assert {r.document_title for r in results} == {"Onboarding"}


def test_document_ids_override_the_filter(wiki):
    """With document_ids the search is limited to them and metadata_filter is
    ignored, even an invalid one."""
    onboarding = Document.objects.get(title="Onboarding")
    results = retrieve_chunks(
        wiki,
        "laptop badge",
        document_ids=[onboarding.pk],
        metadata_filter={"team": "it"},
    )
    assert {r.document_id for r in results} == {onboarding.pk}
    results = retrieve_chunks(
        wiki, "laptop", document_ids=[onboarding.pk], metadata_filter={"nope": 1}
    )
    assert {r.document_id for r in results} == {onboarding.pk}


def test_invalid_filter_raises(wiki):
    """Without document_ids an invalid filter is a FilterError."""
    with pytest.raises(FilterError):
        retrieve_chunks(wiki, "laptop", metadata_filter={"team": "sales"})


def test_only_ready_documents_of_the_channel_are_searched(wiki, make_channel):
    """Chunks of documents not ready, and of other channels, are never returned."""
    add_document(
        wiki,
        title="Draft",
        pages=["Travel expenses draft policy."],
        status=Document.Status.PROCESSING,
    )
    other = make_channel(slug="other")
    add_document(other, title="Elsewhere", pages=["Travel expenses elsewhere."])
    titles = {r.document_title for r in retrieve_chunks(wiki, "travel expenses")}
    assert "Draft" not in titles and "Elsewhere" not in titles


def test_limit_defaults_to_top_k_and_is_capped(wiki, settings):
    """limit defaults to retriever_top_k and never exceeds MCP_MAX_RESULTS."""
    wiki.retriever_top_k = 2
    assert len(retrieve_chunks(wiki, "laptop badge lunch expenses")) == 2
    settings.MCP_MAX_RESULTS = 3
    assert len(retrieve_chunks(wiki, "laptop badge lunch expenses", limit=40)) == 3


def test_empty_query_returns_nothing(wiki):
    """A blank query returns no chunks."""
    assert retrieve_chunks(wiki, "   ") == []


def test_rrf_sums_reciprocal_ranks():
    """RRF scores each item 1/(k+rank) per list; agreement beats one top rank."""
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "c", "a"]], k=1)
    assert [item for item, _ in fused] == ["b", "a", "c"]
    assert fused[0][1] == pytest.approx(1 / 3 + 1 / 2)
    fused = reciprocal_rank_fusion([["x", "y"], ["z"]], k=60)
    assert [item for item, _ in fused] == ["x", "z", "y"]


def test_hybrid_fuses_both_legs_with_rrf(wiki, monkeypatch):
    """Hybrid results are the RRF fusion of the keyword and vector rankings."""
    calls = {}
    original_keyword, original_vector = legs.keyword_steps, legs.vector_steps

    def keyword(*args):
        calls["keyword"] = yield from original_keyword(*args)
        return calls["keyword"]

    def vector(*args):
        calls["vector"] = yield from original_vector(*args)
        return calls["vector"]

    from documents.search import service

    monkeypatch.setattr(service, "keyword_steps", keyword)
    monkeypatch.setattr(service, "vector_steps", vector)
    results = retrieve_chunks(wiki, "lost laptop badge", limit=10)
    expected = reciprocal_rank_fusion(
        [[i for i, _ in calls["keyword"]], [i for i, _ in calls["vector"][1]]],
        k=wiki.retriever_rrf_k,
    )
    assert [(r.chunk_id, r.score) for r in results] == [
        (i, pytest.approx(s)) for i, s in expected
    ]


def _prefer_indexes():
    # On a small table PostgreSQL would sort everything; push it onto the HNSW
    # index so the filtered-scan behaviour is what's exercised.
    with connection.cursor() as cursor:
        cursor.execute(
            "SET enable_seqscan = off; SET enable_bitmapscan = off; "
            "SET enable_sort = off"
        )


def test_vector_leg_is_not_short_under_a_selective_filter(
    make_channel, fake_embedder, settings
):
    """With a filter matching few chunks, the vector leg still returns as many
    results as asked, where a plain HNSW scan (ef_search 40) comes back short."""
    settings.SEARCH_EXACT_ROWS_PER_VISIT = 0
    channel = make_channel(
        slug="big",
        fields=[{"name": "team", "type": "string", "filterable": True}],
        retriever_mode=Channel.RetrieverMode.VECTOR,
        retriever_candidates=30,
    )
    for index in range(200):
        team = "rare" if index % 20 == 0 else "common"
        add_document(
            channel,
            title=f"doc {index}",
            pages=[
                [f"policy number {index} about topic {index % 7}", f"appendix {index}"]
            ],
            metadata={"team": team},
        )
    _prefer_indexes()
    results = retrieve_chunks(
        channel, "policy topic", metadata_filter={"team": "rare"}, limit=20
    )
    assert len(results) == 20
    assert {r.metadata["team"] for r in results} == {"rare"}

    vector = fake_embedder.embed_query("policy topic")
    with transaction.atomic():
        with connection.cursor() as cursor:
            # The test runs in one transaction: undo the leg's SET LOCALs.
            cursor.execute("SET hnsw.iterative_scan = off; SET hnsw.ef_search = 40")
        plain = list(
            Chunk.objects.for_channel(channel)
            .filter(document__metadata__team="rare", embedding__isnull=False)
            .order_by(CosineDistance("embedding", vector))
            .values_list("id", flat=True)[:20]
        )
    assert len(plain) < 20, "the plain HNSW scan should have come back short"


def test_vector_leg_uses_exact_scan_for_small_filtered_sets(wiki, fake_embedder):
    """Small filtered sets are ranked exactly."""
    wiki.retriever_mode = "vector"
    results = retrieve_chunks(wiki, "badge", metadata_filter={"team": ["hr", "it"]})
    assert len(results) == 3
    vector = fake_embedder.embed_query("badge")
    import numpy as np

    expected = sorted(
        Chunk.objects.filter(document__metadata__team__in=["hr", "it"]),
        key=lambda c: -float(np.dot(c.embedding, vector)),
    )
    assert [r.chunk_id for r in results] == [c.pk for c in expected]


def test_keyword_bm25_prefers_rarer_terms(make_channel, fake_embedder):
    """BM25: a match on a rare term outranks a match on a common one."""
    channel = make_channel(slug="bm25", retriever_mode="keyword")
    for index in range(8):
        add_document(channel, title=f"filler {index}", pages=[f"apple harvest {index}"])
    add_document(channel, title="common", pages=["apple apple orchard notes"])
    add_document(channel, title="rare", pages=["zygote orchard notes"])
    results = retrieve_chunks(channel, "apple zygote")
    assert results[0].document_title == "rare"


def test_keyword_bm25_normalises_length(make_channel, fake_embedder):
    """BM25: with the same term frequency, a shorter chunk outranks a longer one."""
    channel = make_channel(slug="length", retriever_mode="keyword")
    add_document(channel, title="long", pages=["glacier " + "moraine sediment " * 30])
    add_document(channel, title="short", pages=["glacier moraine"])
    add_document(channel, title="other", pages=["desert dunes"])
    results = retrieve_chunks(channel, "glacier")
    assert [r.document_title for r in results] == ["short", "long"]


def test_keyword_query_with_only_unknown_or_stop_words_finds_nothing(wiki):
    """Stop words and terms absent from the channel produce no keyword results."""
    wiki.retriever_mode = "keyword"
    assert retrieve_chunks(wiki, "the and of") == []
    assert retrieve_chunks(wiki, "xylophone") == []


def test_query_with_quotes_and_operators_is_safe(wiki):
    """Quotes, backslashes and tsquery operators in a query are plain text."""
    for query in ["laptop's & | ! ( badge", "'; DROP TABLE x; --", "back\\slash :*"]:
        retrieve_chunks(wiki, query)


def test_retrieval_runs_a_fixed_number_of_queries(wiki, django_assert_max_num_queries):
    """A filtered hybrid search costs a bounded number of queries (no N+1)."""
    wiki = Channel.objects.get(pk=wiki.pk)
    with django_assert_max_num_queries(9):
        results = retrieve_chunks(
            wiki, "laptop badge lunch", metadata_filter={"year": {"min": 2000}}
        )
    assert len(results) >= 3


def test_results_are_the_same_whatever_rows_come_with_the_legs(wiki, monkeypatch):
    """The legs read the rows of their best chunks with their rankings; a
    fused result from further down is loaded on its own, with the same
    fields. Whatever the number preloaded, the results are the same."""
    from documents.search import service

    def search():
        with CaptureQueriesContext(connection) as queries:
            passages = service.retrieve_passages(
                wiki, "laptop badge lunch expenses", limit=4
            )
        loaded = [
            q for q in queries.captured_queries if "WHERE c.id = ANY(" in q["sql"]
        ]
        return [p.model_dump() for p in passages], len(loaded)

    preloaded, loads = search()
    assert len(preloaded) == 4 and loads == 0
    monkeypatch.setattr(service, "PRELOAD_MARGIN", -3)  # one row per leg
    assert search() == (preloaded, 1)


def test_common_terms_score_but_do_not_add_candidates(
    make_channel, fake_embedder, monkeypatch
):
    """Past the candidate budget, commoner query terms stop adding candidates yet
    still count in the BM25 score of the candidates the rarer terms found."""
    monkeypatch.setattr(legs, "KEYWORD_CANDIDATE_BUDGET", 3)
    channel = make_channel(slug="budget", retriever_mode="keyword")
    for index in range(6):
        add_document(channel, title=f"common {index}", pages=[f"harbour note {index}"])
    add_document(channel, title="both", pages=["lighthouse harbour"])
    add_document(channel, title="rare only", pages=["lighthouse keeper"])
    results = retrieve_chunks(channel, "lighthouse harbour", limit=10)
    assert [r.document_title for r in results] == ["both", "rare only"]


def test_candidate_terms_or_rare_terms_and_common_ones():
    """Rare terms are OR-ed up to the budget; when every term is common the
    candidates are chunks holding all of the rarest few."""
    frequencies = {"rare": 5, "mid": 40, "common": 900}
    assert legs.candidate_terms(frequencies, 1000, 50) == (["rare", "mid"], "|")
    assert legs.candidate_terms(frequencies, 1000, 5) == (["rare"], "|")
    common = {"a": 400, "b": 300, "c": 450, "d": 900}
    assert legs.candidate_terms(common, 1000, 50) == (["b", "a", "c"], "&")
    assert legs.candidate_terms(common, 1000, 200) == (["b", "a"], "&")
    assert legs.candidate_terms({"x": 800, "y": 900}, 1000, 50) == (["x"], "&")


def test_all_common_terms_still_find_chunks(make_channel, fake_embedder, monkeypatch):
    """A query of only common terms finds chunks through the rarest of them (a
    term in most chunks is left out of the AND), ranked by the full BM25 score."""
    monkeypatch.setattr(legs, "KEYWORD_CANDIDATE_BUDGET", 1)
    channel = make_channel(slug="common", retriever_mode="keyword")
    for index in range(4):
        add_document(channel, title=f"a{index}", pages=[f"river delta {index}"])
    add_document(channel, title="both", pages=["river delta basin"])
    add_document(channel, title="basin", pages=["basin"])
    results = retrieve_chunks(channel, "river basin", limit=10)
    assert [r.document_title for r in results] == ["both", "basin"]
    results = retrieve_chunks(channel, "delta plateau basin", limit=10)
    assert results[0].document_title == "both"


def _chunk_ids(where: str, params) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT c.id FROM documents_chunk c WHERE {where}", params)
        return {row[0] for row in cursor.fetchall()}


@pytest.mark.parametrize(
    "metadata_filter", [{"team": "hr"}, {"team": ["hr", "it"]}, {"year": {"min": 2024}}]
)
def test_a_filtered_scope_selects_the_chunks_of_the_filters_documents(
    wiki, metadata_filter
):
    """Both forms of the scope's condition (the filter's document ids as an
    array, and hashed per row) select exactly the chunks of the documents the
    filter keeps, and its size is their count."""
    from documents.filters import compile_filter

    documents = (
        Document.objects.for_channel(wiki)
        .ready()
        .filter(compile_filter(wiki, metadata_filter))
    )
    scope = legs.Scope(wiki, documents, restricted=True)
    expected = set(
        Chunk.objects.filter(document__in=documents).values_list("id", flat=True)
    )
    assert expected
    assert _chunk_ids(*scope.condition) == expected
    assert _chunk_ids(*scope.checked_per_row) == expected
    assert scope.size == len(expected)
    nothing = legs.Scope(wiki, Document.objects.none(), restricted=True)
    assert _chunk_ids(*nothing.condition) == set() and nothing.size == 0
    assert _chunk_ids(*nothing.checked_per_row) == set()
    everything = legs.Scope(wiki, Document.objects.none(), restricted=False)
    assert _chunk_ids(*everything.condition) == set(
        Chunk.objects.filter(channel=wiki).values_list("id", flat=True)
    )


@pytest.mark.parametrize("metadata_filter", [{"team": ["hr", "it"]}, {"year": 2024}])
def test_a_filter_past_the_read_limit_is_checked_per_row(
    wiki, metadata_filter, monkeypatch
):
    """A filter keeping more documents than FILTER_READ_LIMIT is read only that
    far: its size is a lower bound, scans led by another index check the
    filter per row, and an exact ranking reads the rest first; both select
    exactly the filter's chunks."""
    from documents.filters import compile_filter

    monkeypatch.setattr(legs, "FILTER_READ_LIMIT", 1)
    documents = (
        Document.objects.for_channel(wiki)
        .ready()
        .filter(compile_filter(wiki, metadata_filter))
    )
    expected = set(
        Chunk.objects.filter(document__in=documents).values_list("id", flat=True)
    )
    scope = legs.Scope(wiki, documents, restricted=True)
    assert not scope.complete
    assert 0 < scope.size < len(expected)
    where, params = scope.checked_per_row
    assert "EXISTS" in where
    assert _chunk_ids(where, params) == expected
    assert _chunk_ids(*scope.condition) == expected
    assert scope.complete and scope.size == len(expected)


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_a_search_past_the_filter_read_limit_finds_what_a_full_read_does(
    wiki, mode, monkeypatch, settings
):
    """Walks and keyword candidates checked per row against the filter return
    the same results, in the same order, as with the filter's ids read whole."""
    settings.SEARCH_EXACT_ROWS_PER_VISIT = 0  # every vector leg walks
    monkeypatch.setattr(legs, "KEYWORD_CANDIDATE_BUDGET", 1)
    wiki.retriever_mode = mode
    metadata_filter = {"team": ["hr", "it"]}

    def search():
        return [
            (r.chunk_id, round(r.score, 6))
            for r in retrieve_chunks(
                wiki, "laptop badge lunch", metadata_filter=metadata_filter
            )
        ]

    whole = search()
    monkeypatch.setattr(legs, "FILTER_READ_LIMIT", 1)
    with CaptureQueriesContext(connection) as queries:
        checked = search()
    assert checked == whole and whole
    ranked = [
        q["sql"] for q in queries if "ORDER BY" in q["sql"] and "EXISTS" in q["sql"]
    ]
    assert ranked and all("unnest" not in sql for sql in ranked)


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_a_filtered_search_evaluates_the_filter_once(wiki, mode):
    """The filter's documents are read once per search (their ids and chunk
    count), not again by the scope's size and by each leg: at 20,000
    documents each evaluation of a broad filter cost 15-35 ms (issue 26)."""
    wiki.retriever_mode = mode
    with CaptureQueriesContext(connection) as queries:
        results = retrieve_chunks(
            wiki, "laptop badge", metadata_filter={"year": {"min": 2024}}
        )
    assert results
    assert {r.document_title for r in results} <= {"Expenses", "Security"}
    filtering = [q["sql"] for q in queries if "'year'" in q["sql"]]
    assert len(filtering) == 1, filtering
    assert "documents_chunk" not in filtering[0]
