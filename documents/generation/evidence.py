"""Evidence for an answer: the sentences of the retrieved pages, scored against
the question.

Each sentence of the pages the retrieved chunks come from (only the part each
chunk covers) is scored by how close its embedding is to the question's (the
channel's embedder, the one retrieval uses), by how much of the question's
weight of words it contains, and by how close the heading or question it stands
under is to the question: in a FAQ the answer follows the question, and in a
regulation it follows "(a) Comments Due Date". Headings and questions are never
evidence themselves.
"""

import contextlib
import hashlib
import math
import re
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, replace

import numpy as np
import Stemmer
from django.db import IntegrityError, transaction

from documents.generation.base import Citation
from documents.generation.sentences import Kind, Sentence, split_sentences
from documents.ingestion import embeddings
from documents.models import Page, SentenceVector
from documents.regions import PageSource, load_pages
from documents.search.service import RetrievedChunk

# Weights of the score, fitted on the questions of benchmarks/answers.py
# (`--calibrate` prints the fit). The score is what ANSWER_MIN_SCORE compares.
SEMANTIC_WEIGHT = 0.75
LEXICAL_WEIGHT = 0.2
TITLE_WEIGHT = 0.5
TYPE_WEIGHT = 0.3
RANK_PENALTY = 0.04
# Candidates scored by meaning (embedded), out of those that score best
# without the model.
EMBED_BUDGET = 24
EMBED_CHARS = 240
# Selection: sentences after the first score within CLOSE_MARGIN of it, and are
# not near-copies of one already chosen (cosine above REDUNDANT).
MAX_SENTENCES = 3
CLOSE_MARGIN = 0.16
REDUNDANT = 0.9
LABEL_CHARS = len(" “” [Document 1234, Page 12] ")

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his
    how i if in into is it its itself just me more most my myself no nor not now of off
    on once only or other our ours ourselves out over own same she should so some such
    than that the their theirs them themselves then there these they this those through
    to too under until up very was we were what when where which while who whom why will
    with would you your yours yourself yourselves give tell show find get""".split()
)
_stemmer = Stemmer.Stemmer("english")
_stemmer_lock = threading.Lock()


def terms(text: str) -> set[str]:
    """The stemmed content words of `text`."""
    words = [w.lower() for w in _WORD.findall(text)]
    with _stemmer_lock:  # PyStemmer objects are not thread-safe
        return set(_stemmer.stemWords([w for w in words if w not in _STOP_WORDS]))


@dataclass
class Evidence:
    """A quotable sentence of a retrieved page and how well it answers."""

    sentence: Sentence  # offsets into the page text
    chunk: RetrievedChunk
    page: PageSource | None
    rank: int  # of the chunk it came with, 0 = best
    semantic: float
    lexical: float
    title: float
    vector: np.ndarray
    typed: float = 0.0
    score: float = 0.0

    @property
    def key(self) -> tuple[int, int]:
        return (self.chunk.document_id, self.chunk.page_number)

    @property
    def text(self) -> str:
        return self.sentence.text


class _LRU:
    """A small thread-safe least-recently-used map."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key, value) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


_sentences_of = _LRU(2048)
_vectors_of = _LRU(20000)


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def page_sentences(text: str) -> list[Sentence]:
    """split_sentences, remembered per text (pages come back query after query)."""
    key = _digest(text)
    units = _sentences_of.get(key)
    if units is None:
        units = split_sentences(text)
        _sentences_of.put(key, units)
    return units


def vectors_for(embedder, items: list[tuple[int | None, str]]) -> list[np.ndarray]:
    """Unit vectors of (page id, text) pairs: from memory, else from the page's
    SentenceVector rows, else embedded now and kept (in memory, and as rows for
    pages, so every process finds them)."""
    model = embedder.model_name
    digests = [_digest(text) for _, text in items]
    vectors: list[np.ndarray | None] = [
        _vectors_of.get((model, digest)) for digest in digests
    ]
    wanted = {
        (page_id, digest)
        for (page_id, _), digest, vector in zip(items, digests, vectors, strict=True)
        if vector is None and page_id is not None
    }
    if wanted:
        rows = SentenceVector.objects.filter(
            embedding_model=model,
            page_id__in={page_id for page_id, _ in wanted},
            digest__in={digest for _, digest in wanted},
        ).values_list("page_id", "digest", "vector")
        stored = {
            (page_id, digest): np.frombuffer(bytes(vector), dtype=np.float16).astype(
                np.float32
            )
            for page_id, digest, vector in rows
            if (page_id, digest) in wanted
        }
        for index, ((page_id, _), digest) in enumerate(
            zip(items, digests, strict=True)
        ):
            vector = stored.get((page_id, digest))
            if vector is not None and vectors[index] is None:
                vectors[index] = vector
                _vectors_of.put((model, digest), vector)
    missing = [i for i, vector in enumerate(vectors) if vector is None]
    if missing:
        fresh = embedder.embed_documents([items[i][1] for i in missing])
        rows = {}
        for i, vector in zip(missing, fresh, strict=True):
            vector = np.asarray(vector, dtype=np.float16).astype(np.float32)
            vectors[i] = vector
            _vectors_of.put((model, digests[i]), vector)
            page_id = items[i][0]
            if page_id is not None:
                rows[(page_id, digests[i])] = SentenceVector(
                    page_id=page_id,
                    digest=digests[i],
                    embedding_model=model,
                    vector=vector.astype(np.float16).tobytes(),
                )
        # A page deleted meanwhile, or a twin request, makes a row fail: skip it.
        with contextlib.suppress(IntegrityError), transaction.atomic():
            SentenceVector.objects.bulk_create(rows.values(), ignore_conflicts=True)
    return vectors  # type: ignore[return-value]


def embedded_text(unit: Sentence) -> str:
    """What the embedder sees of a unit: a long sentence's meaning is in its
    opening, and embedding cost grows with length."""
    return unit.text[:EMBED_CHARS]


def prepare_document(document_id: int, *, batch: int = 256) -> int:
    """Embed and keep every sentence and heading of a document's pages that has
    no vector yet, so that answers never wait for them; returns how many."""
    embedder = embeddings.get_embedder()
    model = embedder.model_name
    existing = set(
        SentenceVector.objects.filter(
            page__document_id=document_id, embedding_model=model
        ).values_list("page_id", "digest")
    )
    pages = Page.objects.filter(document_id=document_id, has_text=True)
    todo: dict[tuple[int, str], str] = {}
    for page_id, text in pages.values_list("id", "text").iterator():
        for unit in page_sentences(text or ""):
            if unit.quotable or unit.kind in (Kind.HEADING, Kind.QUESTION):
                embedded = embedded_text(unit)
                key = (page_id, _digest(embedded))
                if key not in existing:
                    todo[key] = embedded
    keys = list(todo)
    for start in range(0, len(keys), batch):
        part = keys[start : start + batch]
        fresh = embedder.embed_documents([todo[key] for key in part])
        rows = [
            SentenceVector(
                page_id=page_id,
                digest=digest,
                embedding_model=model,
                vector=np.asarray(vector, dtype=np.float16).tobytes(),
            )
            for (page_id, digest), vector in zip(part, fresh, strict=True)
        ]
        with contextlib.suppress(IntegrityError), transaction.atomic():
            SentenceVector.objects.bulk_create(rows, ignore_conflicts=True)
    return len(keys)


def _title_before(units: list[Sentence], index: int) -> Sentence | None:
    """The last heading or question before units[index] that has a sentence
    under it (a page's last line is a footer, not a heading)."""
    content = False
    for unit in reversed(units[:index]):
        if unit.kind in (Kind.HEADING, Kind.QUESTION):
            if content or index < len(units):
                return unit
        elif unit.quotable:
            content = True
    return None


def _units(chunks: list[RetrievedChunk], pages: dict) -> list[tuple]:
    """(unit, chunk, page, rank) for the units each chunk covers on its page,
    each page unit once (overlapping chunks share sentences), in rank order."""
    found: list[tuple] = []
    seen: set[tuple[int, int, int]] = set()
    titled: set[tuple[int, str]] = set()
    for rank, chunk in enumerate(chunks):
        page = pages.get((chunk.document_id, chunk.page_number))
        if page is None:  # the page went away: fall back to the chunk's own text
            units = split_sentences(chunk.text)
            found.extend((unit, chunk, None, rank) for unit in units)
            continue
        units = page_sentences(page.text)
        span = page.locate(chunk.text)
        start, end = span if span else (0, len(page.text))
        for index, unit in enumerate(units):
            if unit.end <= start or unit.start >= end:
                continue
            key = (chunk.document_id, chunk.page_number, unit.start)
            if key in seen:
                continue
            seen.add(key)
            # Bring in the heading or question the sentence stands under: on
            # its page, or the last one of the page before when that came too.
            title = _title_before(units, index)
            if title is None:
                before = pages.get((chunk.document_id, chunk.page_number - 1))
                if before is not None:
                    earlier = page_sentences(before.text)
                    title = _title_before(earlier, len(earlier))
                    title = replace(title, start=-1, end=-1) if title else None
            if title is not None and (chunk.chunk_id, title.text) not in titled:
                titled.add((chunk.chunk_id, title.text))
                found.append((title, chunk, page, rank))
            found.append((unit, chunk, page, rank))
    found.sort(key=lambda item: (item[3], item[1].chunk_id, item[0].start))
    return found


# What a question asks for, and what a sentence must hold to give it.
_DURATION = re.compile(
    r"\d+(?:[.,]\d+)?\s*(?:(?:-|–|—|to)\s*\d+\s*)?"
    r"(?:seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)\b",
    re.I,
)
_FIGURE = re.compile(r"\d")
# A year not followed by "-23-51" (document numbers), a month and day, or d/m/y.
_DATE = re.compile(
    r"\b(?:1[5-9]|20)\d\d\b(?![–-]\d)|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct"
    r"|nov|dec)[a-z]*\.? \d|\b\d{1,2}/\d{1,2}/\d{2,4}\b",
    re.I,
)
_PERSON = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z]\.)*\s+[A-Z][a-z]+")
_REASON = re.compile(
    r"\bbecause\b|\breasons?\b|\bdue to\b|\bcaused? by\b|\bso that\b"
    r"|\bin order to\b|\bsince\b|\bresult",
    re.I,
)
_DEFINITION = re.compile(
    r"\b(?:is|are|was|were)\s+(?:a|an|the)\b|\bcalled\b|\bknown as\b"
    r"|\brefers? to\b|\bstands? for\b|\bdefined as\b|\bmeans\b|\bi\.e\.",
    re.I,
)
_ASKS = [
    (re.compile(r"\bhow long\b", re.I), _DURATION),
    (
        re.compile(
            r"\bhow (?:many|much)\b|\bnumber of\b|\btotal\b|\bamount\b"
            r"|\bcost\b|\bprice\b|\brate\b|\bpercent",
            re.I,
        ),
        _FIGURE,
    ),
    (
        re.compile(
            r"\bwhen\b|\bwhat (?:year|date|day|time)\b|\bwhich year\b"
            r"|\bdeadline\b|\bdue\b",
            re.I,
        ),
        _DATE,
    ),
    (re.compile(r"\bwho(?:m|se)?\b", re.I), _PERSON),
    (re.compile(r"\bwhy\b", re.I), _REASON),
    # "What is LCIS?", "What are the gists …?": a short question for a meaning.
    (
        re.compile(r"^\s*what(?:'s| is| are)\s+(?:\S+\s*){1,5}\?*\s*$", re.I),
        _DEFINITION,
    ),
]
_FIGURES = (_DURATION, _FIGURE, _DATE)
# Two capitalised words are weak evidence of a name.
_ASK_WEIGHT = {_PERSON: 0.5}


# Reference marks like "[11, 14, 39]" are no figures.
_REFERENCES = re.compile(r"\[[\d,;\s–-]+\]")
_NUMBER_NEAR = 3  # words between a count and what it counts


def typed(text: str, expected: list[re.Pattern], wanted: set[str]) -> float:
    """How far `text` holds what the question asks for (0 to 1). A figure
    counts fully next to one of the question's words ("73 airplanes" for "how
    many airplanes"), half anywhere else."""
    text = _REFERENCES.sub(" ", text)
    found = 0.0
    for gives in expected:
        if gives is _FIGURE:
            words = text.split()
            near = False
            for index, word in enumerate(words):
                if _FIGURE.search(word):
                    window = words[
                        max(0, index - _NUMBER_NEAR) : index + 1 + _NUMBER_NEAR
                    ]
                    if terms(" ".join(window)) & wanted:
                        near = True
                        break
            found += 1.0 if near else (0.5 if _FIGURE.search(text) else 0.0)
        elif gives.search(text):
            found += _ASK_WEIGHT.get(gives, 1.0)
    return found / len(expected)


def answer_types(query: str) -> list[re.Pattern]:
    """Patterns a sentence answering `query` is expected to contain."""
    return [gives for asks, gives in _ASKS if asks.search(query)]


@dataclass
class _Candidate:
    unit: Sentence
    chunk: RetrievedChunk
    page: PageSource | None
    rank: int
    title: Sentence | None
    lexical: float = 0.0
    title_lexical: float = 0.0
    typed: float = 0.0
    cheap: float = 0.0


def _candidates(query: str, units: list[tuple]) -> list[_Candidate]:
    """Quotable units with the scores that need no model: the question's words
    they hold (weighted by how rare each is among the candidates), those of the
    heading or question they stand under, and whether they hold the kind of
    thing asked for (a duration for "how long", a figure for "how many" …)."""
    candidates: list[_Candidate] = []
    title: Sentence | None = None
    previous_chunk = None
    expected = answer_types(query)
    figures = any(gives in _FIGURES for gives in expected)
    for unit, chunk, page, rank in units:
        if chunk.chunk_id != previous_chunk:
            title, previous_chunk = None, chunk.chunk_id
        if unit.kind in (Kind.HEADING, Kind.QUESTION):
            title = unit
        elif unit.kind == Kind.SENTENCE or (unit.kind == Kind.ROW and figures):
            # A table row answers only a question asking for a figure or date.
            candidates.append(_Candidate(unit, chunk, page, rank, title))
    wanted = terms(query)
    if not candidates or not wanted:
        return candidates
    unit_terms = [terms(c.unit.text) & wanted for c in candidates]
    spread = Counter(t for found in unit_terms for t in found)
    weight = {
        t: math.log(1 + (len(candidates) + 1) / (spread[t] + 0.5)) for t in wanted
    }
    total = sum(weight.values())
    for candidate, found in zip(candidates, unit_terms, strict=True):
        candidate.lexical = sum(weight[t] for t in found) / total
        if candidate.title is not None:
            title_terms = terms(candidate.title.text) & wanted
            candidate.title_lexical = sum(weight[t] for t in title_terms) / total
        if expected:
            candidate.typed = typed(candidate.unit.text, expected, wanted)
        candidate.cheap = (
            candidate.lexical
            + 0.5 * candidate.title_lexical
            + TYPE_WEIGHT * candidate.typed
            - RANK_PENALTY * rank_distance(candidate.rank)
        )
    return candidates


def gather(query: str, chunks: list[RetrievedChunk]) -> list[Evidence]:
    """The quotable sentences of `chunks`' pages, scored, best first.

    Scoring by meaning needs the embedder, the costly part: only the
    EMBED_BUDGET candidates that score best without it are embedded (with
    the headings and questions they stand under)."""
    if not chunks or not terms(query):
        return []
    pages = load_pages((chunk.document_id, chunk.page_number) for chunk in chunks)
    candidates = _candidates(query, _units(chunks, pages))
    if not candidates:
        return []
    candidates.sort(key=lambda c: -c.cheap)
    candidates = candidates[:EMBED_BUDGET]
    titles = {
        id(c.title): (c.title, c.page.id if c.page else None)
        for c in candidates
        if c.title
    }
    embedder = embeddings.get_embedder()
    query_vector = np.asarray(embedder.embed_query(query), dtype=np.float32)
    items = [(c.page.id if c.page else None, embedded_text(c.unit)) for c in candidates]
    items += [(page_id, embedded_text(title)) for title, page_id in titles.values()]
    vectors = vectors_for(embedder, items)
    title_similarity = {
        key: float(np.dot(query_vector, vector))
        for key, vector in zip(titles, vectors[len(candidates) :], strict=True)
    }
    evidence = []
    for candidate, vector in zip(candidates, vectors, strict=False):
        item = Evidence(
            sentence=candidate.unit,
            chunk=candidate.chunk,
            page=candidate.page,
            rank=candidate.rank,
            semantic=float(np.dot(query_vector, vector)),
            lexical=candidate.lexical,
            title=title_similarity.get(id(candidate.title), 0.0),
            typed=candidate.typed,
            vector=vector,
        )
        item.score = score(item)
        evidence.append(item)
    evidence.sort(key=lambda item: -item.score)
    return evidence


def score(item: Evidence) -> float:
    """How well one sentence answers: mostly meaning, then words, then the
    heading or question it stands under and whether it holds what is asked
    for, a little less for lower-ranked chunks."""
    return (
        SEMANTIC_WEIGHT * item.semantic
        + LEXICAL_WEIGHT * item.lexical
        + TITLE_WEIGHT * max(0.0, item.title - item.semantic)
        + TYPE_WEIGHT * item.typed
        - RANK_PENALTY * rank_distance(item.rank)
    )


def rank_distance(rank: int) -> float:
    """How far down retrieval's list a chunk came (0 for the first), growing
    ever slower: the sixteenth chunk is not sixteen times worse."""
    return math.log2(1 + rank)


def select(
    evidence: list[Evidence], *, min_score: float, max_chars: int
) -> list[Evidence]:
    """The sentences an answer quotes, best first: the best one when it scores
    at least `min_score`, then those that score close to it, say something the
    chosen ones don't, and fit in `max_chars`."""
    if not evidence or evidence[0].score < min_score:
        return []
    best = evidence[0]
    chosen = [best]
    used = len(best.text)
    for item in evidence[1:]:
        if len(chosen) == MAX_SENTENCES or item.score < best.score - CLOSE_MARGIN:
            break
        if any(float(np.dot(item.vector, c.vector)) > REDUNDANT for c in chosen):
            continue
        if used + LABEL_CHARS + len(item.text) > max_chars:
            continue
        chosen.append(item)
        used += LABEL_CHARS + len(item.text)
    return chosen


def citation(
    item: Evidence, quote: str | None = None, *, quoted: str | None = None
) -> Citation:
    """The citation of one piece of evidence: its quote (as shown), and the span
    and line boxes of `quoted`, the part of the sentence it stands for (the
    whole sentence by default)."""
    sentence = item.sentence
    quote = quote if quote is not None else sentence.text
    quoted = quoted if quoted is not None else sentence.text
    if item.page is None:
        return Citation(
            document_id=item.chunk.document_id,
            page_number=item.chunk.page_number,
            chunk_id=item.chunk.chunk_id,
            quote=quote,
        )
    end = sentence.end
    if quoted != sentence.text:  # cut at the budget: the part quoted
        span = item.page.locate(quoted.rstrip("…").rstrip(), near=sentence.start)
        end = span[1] if span else end
    return Citation(
        document_id=item.chunk.document_id,
        page_number=item.chunk.page_number,
        chunk_id=item.chunk.chunk_id,
        quote=quote,
        regions=item.page.regions(sentence.start, end),
        start=sentence.start,
        end=end,
    )
