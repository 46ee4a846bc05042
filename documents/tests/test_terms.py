import pytest
from django.core.files.base import ContentFile

from documents.access import COMMAND_LINE
from documents.models import Chunk, KeywordStatistics, TermStatistic
from documents.search import indexing, terms
from documents.search.indexing import forget_chunks
from documents.tests.corpus import add_document


def frequencies(channel) -> dict[str, int]:
    return dict(
        TermStatistic.objects.filter(
            channel=channel, chunk_frequency__gt=0
        ).values_list("lexeme", "chunk_frequency")
    )


def test_lexemes_are_stemmed_without_stop_words(db):
    """Lexemes come from PostgreSQL's english configuration: stemmed, lower-cased,
    stop words dropped, counted per text."""
    first, second = terms.lexeme_counts(
        ["The runners were running and ran", "Studies of the study"]
    )
    assert first == {"runner": 1, "run": 1, "ran": 1}
    assert second == {"studi": 2}
    assert terms.lexeme_counts([]) == []


def test_document_weight_saturates_and_normalises_length():
    """The document-side BM25 weight grows with tf but saturates below k1+1, and
    falls as the chunk gets longer than average."""
    one = terms.document_weight(1, 10, 10)
    assert one == pytest.approx(1.0)
    assert terms.document_weight(2, 10, 10) > one
    assert terms.document_weight(100, 10, 10) < terms.K1 + 1
    assert terms.document_weight(1, 40, 10) < one < terms.document_weight(1, 5, 10)


def test_idf_is_positive_and_favours_rare_terms():
    """Lucene's IDF is always positive and larger for rarer terms."""
    assert terms.idf(1, 1000) > terms.idf(100, 1000) > terms.idf(1000, 1000) > 0


def test_tsquery_text_quotes_lexemes():
    """Lexemes are quoted for a ::tsquery cast; quotes and backslashes escaped."""
    assert terms.tsquery_text(["a", "o'neil", "x\\y"]) == "'a' | 'o''neil' | 'x\\\\y'"


def test_prepare_chunks_stores_bm25_weights_and_statistics(make_channel, fake_embedder):
    """Ingested chunks carry BM25 weights over hashed lexemes, and the channel's
    chunk count, total length and per-lexeme chunk frequencies are kept."""
    channel = make_channel()
    add_document(channel, title="a", pages=[["cat sat on the mat", "cat cat dog"]])
    stats = KeywordStatistics.objects.get(channel=channel)
    assert (stats.chunk_count, stats.term_total) == (2, 6)
    assert frequencies(channel) == {"cat": 2, "sat": 1, "mat": 1, "dog": 1}
    second = Chunk.objects.get(order=1)
    assert second.term_count == 3
    weights = dict(zip(second.terms.indices(), second.terms.values(), strict=True))
    assert weights[terms.term_id("cat")] == pytest.approx(
        terms.document_weight(2, 3, 3.0)
    )
    assert weights[terms.term_id("dog")] == pytest.approx(
        terms.document_weight(1, 3, 3.0)
    )


def test_forget_chunks_removes_a_documents_counts(make_channel, fake_embedder):
    """forget_chunks takes a document's chunks out of the statistics."""
    channel = make_channel()
    keep = add_document(channel, title="keep", pages=["cat and dog"])
    gone = add_document(channel, title="gone", pages=[["cat", "bird song"]])
    forget_chunks(channel, gone.pk)
    gone.delete()
    stats = KeywordStatistics.objects.get(channel=channel)
    assert (stats.chunk_count, stats.term_total) == (1, 2)
    assert frequencies(channel) == {"cat": 1, "dog": 1}
    assert keep.pk


def test_ingestion_service_keeps_statistics_exact_on_reingest(
    make_channel, fake_embedder
):
    """Through the real ingestion service, re-ingesting a document replaces its
    counts rather than adding them twice, and deleting it removes them."""
    services = pytest.importorskip("documents.services.documents")
    ingestion = pytest.importorskip("documents.services.ingestion")
    channel = make_channel()
    document = services.create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=ContentFile(b"Glaciers carve valleys. Glaciers move slowly."),
        filename="ice.txt",
        content_type="text/plain",
    )
    ingestion.ingest_document(document_id=document.pk)
    before = frequencies(channel)
    assert before["glacier"] == 1
    ingestion.ingest_document(document_id=document.pk)
    assert frequencies(channel) == before
    assert KeywordStatistics.objects.get(channel=channel).chunk_count == 1
    services.delete_document(actor=COMMAND_LINE, document=document)
    assert frequencies(channel) == {}
    assert KeywordStatistics.objects.get(channel=channel).chunk_count == 0


def test_reweight_channel_uses_the_current_average_length(make_channel, fake_embedder):
    """Weights stored while the average chunk length was different are
    recomputed with the channel's current average."""
    channel = make_channel()
    add_document(channel, title="first", pages=["cat"])
    add_document(channel, title="second", pages=["cat dog bird fish cow pig"])
    first = Chunk.objects.get(document__title="first")
    stale = first.terms.values()[0]
    assert stale == pytest.approx(terms.document_weight(1, 1, 1.0))
    assert indexing.reweight_channel(channel) == 2
    first.refresh_from_db()
    assert first.terms.values()[0] == pytest.approx(terms.document_weight(1, 1, 3.5))
    assert first.terms.values()[0] > stale
