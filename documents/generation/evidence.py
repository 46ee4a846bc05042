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

import math
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from documents.generation.base import Citation
from documents.generation.sentences import (
    Kind,
    Sentence,
    page_sentences,
    split_sentences,
)
from documents.generation.vectors import embedded_text, vectors_for
from documents.generation.words import (
    DEFINITION,
    FIGURES,
    answer_types,
    counted_terms,
    defined_term,
    focus_terms,
    is_choice,
    names_date,
    terms,
    typed,
)
from documents.ingestion import embeddings
from documents.regions import PageSource, load_pages
from documents.results import RetrievedChunk

# Weights of the score, fitted on the questions of benchmarks/answers.py
# (`--calibrate` prints the fit). ANSWER_MIN_SCORE compares `relevance`.
SEMANTIC_WEIGHT = 0.75
LEXICAL_WEIGHT = 0.2
TITLE_WEIGHT = 0.5
TYPE_WEIGHT = 0.3
RANK_PENALTY = 0.04
# "Which judge …?": a unit naming what is asked for (or standing under a
# heading that does) answers it (0.05-0.15 score the same on the fit half).
FOCUS_WEIGHT = 0.1
# Candidates scored by meaning (embedded), out of those that score best
# without the model.
EMBED_BUDGET = 24
# Selection: sentences after the first score within CLOSE_MARGIN of it, and are
# not near-copies of one already chosen (cosine above REDUNDANT).
MAX_SENTENCES = 3
CLOSE_MARGIN = 0.16
REDUNDANT = 0.9
LABEL_CHARS = len(" “” [Document 1234, Page 12] ")


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
    focus: float = 0.0
    score: float = 0.0

    @property
    def key(self) -> tuple[int, int]:
        return (self.chunk.document_id, self.chunk.page_number)

    @property
    def text(self) -> str:
        return self.sentence.text


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
        units = page_sentences(page.text, page.headings)
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
                    earlier = page_sentences(before.text, before.headings)
                    title = _title_before(earlier, len(earlier))
                    title = replace(title, start=-1, end=-1) if title else None
            if title is not None and (chunk.chunk_id, title.text) not in titled:
                titled.add((chunk.chunk_id, title.text))
                found.append((title, chunk, page, rank))
            found.append((unit, chunk, page, rank))
    found.sort(key=lambda item: (item[3], item[1].chunk_id, item[0].start))
    return found


@dataclass
class _Candidate:
    unit: Sentence
    chunk: RetrievedChunk
    page: PageSource | None
    rank: int
    title: Sentence | None
    lexical: float = 0.0
    title_lexical: float = 0.0
    focus: float = 0.0
    typed: float = 0.0
    cheap: float = 0.0


def _leads(candidate: _Candidate) -> bool:
    """Whether the candidate is the first quotable unit under its heading: in
    a glossary the definition, not a later sentence using the term."""
    if candidate.page is None or candidate.title is None:
        return False
    after = max(candidate.title.end, 0)
    return not any(
        unit.quotable and after <= unit.start < candidate.unit.start
        for unit in page_sentences(candidate.page.text, candidate.page.headings)
    )


def _candidates(query: str, units: list[tuple]) -> list[_Candidate]:
    """Quotable units with the scores that need no model: the question's words
    they hold (weighted by how rare each is among the candidates), those of the
    heading or question they stand under, and whether they hold the kind of
    thing asked for (a duration for "how long", a figure for "how many" …)."""
    candidates: list[_Candidate] = []
    title: Sentence | None = None
    previous_chunk = None
    expected = answer_types(query)
    defined = defined_term(query)
    # A line of figures answers a question asking for a figure or a date, or
    # one naming a date: "the balance after the deposit on 1 August 2018" is
    # on the statement's row of that date.
    figures = any(gives in FIGURES for gives in expected) or names_date(query)
    for unit, chunk, page, rank in units:
        if chunk.chunk_id != previous_chunk:
            title, previous_chunk = None, chunk.chunk_id
        if unit.kind in (Kind.HEADING, Kind.QUESTION):
            if unit.table_header:
                # A Word or PowerPoint table's first row is its header by the
                # reader's convention, and a row of the table all the same.
                candidates.append(_Candidate(unit, chunk, page, rank, title))
            title = unit
        elif unit.kind in (Kind.SENTENCE, Kind.LINE) or (
            unit.kind == Kind.ROW and (figures or unit.table_row)
        ):
            # A line of figures answers only a question asking for or naming a
            # figure or date (`figures`); a table's row whatever its cells hold.
            candidates.append(_Candidate(unit, chunk, page, rank, title))
    wanted = terms(query)
    if not candidates or not wanted:
        return candidates
    focus = focus_terms(query)
    counted = counted_terms(query)
    # Each unit's and heading's terms, stemmed once (a heading stands over
    # many units).
    held_terms = [terms(c.unit.text) for c in candidates]
    heading_terms = {
        id(c.title): terms(c.title.text) for c in candidates if c.title is not None
    }
    unit_terms = [held & wanted for held in held_terms]
    spread = Counter(t for found in unit_terms for t in found)
    weight = {
        t: math.log(1 + (len(candidates) + 1) / (spread[t] + 0.5)) for t in wanted
    }
    total = sum(weight.values())
    for candidate, held, found in zip(candidates, held_terms, unit_terms, strict=True):
        heading = heading_terms.get(id(candidate.title), frozenset())
        candidate.lexical = sum(weight[t] for t in found) / total
        if focus:
            candidate.focus = len((held | heading) & focus) / len(focus)
        if candidate.title is not None:
            title_terms = heading & wanted
            candidate.title_lexical = sum(weight[t] for t in title_terms) / total
        if expected:
            # A row naming both alternatives of a choice is a table's header
            # ("| Symptom | Cause |"), not what tells them apart.
            asked = (
                [p for p in expected if not is_choice(p)]
                if candidate.unit.kind == Kind.ROW or candidate.unit.table_header
                else expected
            )
            candidate.typed = (
                typed(candidate.unit.text, asked, wanted, counted) if asked else 0
            )
            # In a glossary the term is the heading and the definition the
            # sentence under it ("Black-box monitoring" / "Testing externally
            # visible behavior …"): that sentence is what "what is" asks for.
            if (
                DEFINITION in expected
                and candidate.title is not None
                and defined
                and defined <= heading <= wanted
                and _leads(candidate)
            ):
                # The entry reads as "term: definition": it holds the term.
                candidate.typed = 1.0
                candidate.lexical = max(candidate.lexical, candidate.title_lexical)
        if not (candidate.lexical or candidate.title_lexical):
            # A date or a definition about nothing the question names answers
            # nothing: off-topic questions found them everywhere.
            candidate.typed = 0.0
        candidate.cheap = (
            candidate.lexical
            + 0.5 * candidate.title_lexical
            + TYPE_WEIGHT * candidate.typed
            - RANK_PENALTY * rank_distance(candidate.rank)
        )
    return candidates


def gather(
    query: str,
    chunks: list[RetrievedChunk],
    *,
    query_vector: np.ndarray | None = None,
) -> list[Evidence]:
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
    if query_vector is None:
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
            focus=candidate.focus,
            vector=vector,
        )
        item.score = score(item)
        evidence.append(item)
    evidence.sort(key=lambda item: -item.score)
    return evidence


def score(item: Evidence) -> float:
    """How well one sentence answers, what orders the evidence: how closely it
    matches the question (`relevance`), whether it holds the kind of thing
    asked for, whether it (or its heading) names what a "which X" question
    asks for, a little less for lower-ranked chunks."""
    return (
        relevance(item)
        + TYPE_WEIGHT * item.typed
        + FOCUS_WEIGHT * item.focus
        - RANK_PENALTY * rank_distance(item.rank)
    )


def relevance(item: Evidence) -> float:
    """How closely the unit itself matches the question: mostly its meaning,
    then the question's words it holds and the heading or question it stands
    under on its page. What ANSWER_MIN_SCORE compares, so that a refusal rests
    on what would be quoted. Neither the credit for holding the kind of thing
    asked for nor retrieval's rank is in it: a date, a name or an "is a" is in
    sentences about anything (off-topic questions found a reference list's
    "2018." and "points of integration is a better strategy"), and the rank
    comes from a chunk's retrieval text, its title and heading path included
    (documents.ingestion.context), not from the sentence."""
    return (
        SEMANTIC_WEIGHT * item.semantic
        + LEXICAL_WEIGHT * item.lexical
        + TITLE_WEIGHT * max(0.0, item.title - item.semantic)
    )


def rank_distance(rank: int) -> float:
    """How far down retrieval's list a chunk came (0 for the first), growing
    ever slower: the sixteenth chunk is not sixteen times worse."""
    return math.log2(1 + rank)


def select(
    evidence: list[Evidence], *, min_score: float, max_chars: int
) -> list[Evidence]:
    """The sentences an answer quotes, best first, out of those whose
    relevance is at least `min_score` (none: the answer is a refusal): the
    best one, then those that score close to it, say something the chosen
    ones don't, and fit in `max_chars`."""
    evidence = [item for item in evidence if relevance(item) >= min_score]
    if not evidence:
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
            revision=item.chunk.revision,
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
        revision=item.chunk.revision,
    )
