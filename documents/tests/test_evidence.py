"""documents.generation.evidence: scoring the sentences of retrieved pages, and
keeping their vectors."""

import pytest

from documents.generation import evidence, vectors, words
from documents.generation.service import answer_question, evidence_chunks
from documents.models import Document, SentenceVector
from documents.services.documents import delete_document
from documents.tests.corpus import add_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def faq(make_channel, fake_embedder):
    channel = make_channel("faq")
    add_document(
        channel,
        title="FAQ",
        pages=[
            "Questions\n\nHow long does a scan take?\nThe scan is painless. It takes "
            "about 20 minutes.\n\nWhere is the clinic?\nThe clinic is on Main "
            "Street."
        ],
    )
    return channel


def test_sentences_under_a_matching_question_score_higher(faq):
    """A sentence standing under the document's own question that matches the
    query gets that question's closeness; the question itself is never
    evidence, nor is the heading."""
    chunks = evidence_chunks(faq, "How long does a scan take?")
    found = evidence.gather("How long does a scan take?", chunks)
    texts = [item.text for item in found]
    assert "How long does a scan take?" not in texts
    assert "Questions" not in texts
    duration = next(i for i in found if "20 minutes" in i.text)
    clinic = next(i for i in found if "Main Street" in i.text)
    assert duration.title > clinic.title
    assert duration.score > clinic.score


def test_what_is_asked_for_counts(faq):
    """A "how long" question prefers the sentence holding a duration; a figure
    counts fully next to what is counted, half elsewhere, and reference marks
    like "[11, 14]" are no figures."""
    found = evidence.gather(
        "How long does a scan take?",
        evidence_chunks(faq, "How long does a scan take?"),
    )
    assert found[0].text == "It takes about 20 minutes."
    assert found[0].typed == 1.0
    assert words.answer_types("Who signed it?")
    assert words.answer_types("What is LCIS?")
    assert not words.answer_types("Describe the clinic.")
    many = words.answer_types("How many airplanes?")
    assert words.typed("It affects 73 airplanes.", many, {"airplan"}) == 1.0
    assert words.typed("In 2019 it had grown.", many, {"airplan"}) == 0.5
    assert words.typed("As shown [11, 14], it grew.", many, {"airplan"}) == 0.0


def test_selection_puts_the_best_first_and_keeps_to_the_budget(faq):
    """select: nothing below the threshold, the best first, only close ones
    after it, never over the budget, no near-copies."""
    found = evidence.gather("Where is the clinic?", evidence_chunks(faq, "clinic"))
    assert evidence.select(found, min_score=9.0, max_chars=500) == []
    chosen = evidence.select(found, min_score=0.0, max_chars=500)
    assert chosen[0].text == "The clinic is on Main Street."
    assert all(c.score >= chosen[0].score - evidence.CLOSE_MARGIN for c in chosen)
    short = evidence.select(found, min_score=0.0, max_chars=40)
    assert [c.text for c in short] == ["The clinic is on Main Street."]


def test_a_choice_asks_for_both_alternatives():
    """ "… symptoms or causes?" asks for the sentence naming both, not for one
    about either alone (issue 22's SRE book example)."""
    choice = words.answer_types("Should alerts be based on symptoms or causes?")
    wanted = words.terms("Should alerts be based on symptoms or causes?")
    both = 'The "what\'s broken" indicates the symptom; the "why" is a cause.'
    assert words.typed(both, choice, wanted) == 1.0
    assert words.typed("Find the root causes of the problem.", choice, wanted) == 0
    assert words.answer_types("Is it black or black?") == []


def test_a_glossary_entry_defines_its_heading(make_channel, fake_embedder):
    """Under the term "Black-box monitoring", the sentence that follows is its
    definition: it holds what "What is black-box monitoring?" asks for, though
    it names neither word (the SRE book's definitions, issue 22)."""
    channel = make_channel("glossary")
    add_document(
        channel,
        title="Definitions",
        pages=[
            "Definitions\n\nWhite-box monitoring\nMonitoring based on metrics "
            "exposed by the internals of the system.\nBlack-box monitoring\n"
            "Testing externally visible behavior as a user would see it. We "
            "use black-box monitoring for paging.\n"
        ],
    )
    question = "What is black-box monitoring?"
    found = evidence.gather(question, evidence_chunks(channel, question))
    definition = next(i for i in found if i.text.startswith("Testing externally"))
    internals = next(i for i in found if i.text.startswith("Monitoring based"))
    later = next(i for i in found if i.text.startswith("We use black-box"))
    assert definition.typed == 1.0
    assert internals.typed < 1.0
    # Only the first sentence under the term defines it; the entry reads as
    # "term: definition", so it holds the term's words as well.
    assert later.typed < 1.0
    assert definition.lexical == 1.0
    assert found[0] is definition


def test_prepared_sentences_are_never_embedded_again(faq, fake_embedder, monkeypatch):
    """prepare_document keeps a vector for every sentence and heading; answers
    then read them from the database instead of calling the embedder."""
    document = Document.objects.get(title="FAQ")
    made = vectors.prepare_document(document.pk)
    assert made == SentenceVector.objects.filter(page__document=document).count() > 0
    assert vectors.prepare_document(document.pk) == 0  # nothing left to do
    vectors._vectors_of._items.clear()  # a fresh process

    def no_embedding(texts):
        raise AssertionError(f"embedded again: {texts}")

    monkeypatch.setattr(fake_embedder, "embed_documents", no_embedding)
    answer = answer_question(faq, "Where is the clinic?")
    assert "Main Street" in answer.text


def test_vectors_kept_by_answers_go_with_their_document(faq):
    """Answering keeps the vectors it computed; deleting the document deletes
    them with its pages."""
    vectors._vectors_of._items.clear()  # a fresh process
    answer_question(faq, "Where is the clinic?")
    document = Document.objects.get(title="FAQ")
    assert SentenceVector.objects.filter(page__document=document).exists()
    from documents.access import COMMAND_LINE

    delete_document(document=document, actor=COMMAND_LINE)
    assert not SentenceVector.objects.exists()


def test_a_slides_lines_are_text_not_headings():
    """A slide's line with a verb and no full stop, a line holding a sentence's
    end, and a page's closing line after a table are units to quote; a
    glossary's terms stay headings (issue 22: pptx slides were never quoted)."""
    from documents.generation.sentences import Kind, split_sentences

    slide = split_sentences(
        "# A Nested Shape parsing\n\nNested Shape\n\n"
        "This is a nested shape with content in 2 shapes\nComment 1"
    )
    assert [u.kind for u in slide][:2] == [Kind.HEADING, Kind.HEADING]
    assert slide[2].kind == Kind.SENTENCE
    assert slide[2].text.startswith("This is a nested shape with content")
    picture = split_sentences(
        "# Slide 2\n\nPicture: The first page of the paper. 44bf7d06-5e7a\n\n"
        "AutoGen is a framework."
    )
    assert picture[1].kind == Kind.SENTENCE
    table = split_sentences(
        "# A Table, with a caption\n\n| Right | Left |\n| --- | --- |\n| 12 | 12 |"
        "\n\nDemonstration of simple table syntax, with alignment"
    )
    assert table[-1].kind == Kind.SENTENCE
    glossary = split_sentences(
        "- White-box monitoring\n- Monitoring based on metrics exposed by the "
        "internals of the system.\n- Black-box monitoring\n- Testing externally "
        "visible behavior as a user would see it."
    )
    assert [u.kind for u in glossary] == [Kind.HEADING, Kind.SENTENCE] * 2


def test_lines_marked_as_headings_are_headings_whatever_their_words():
    """A line the reader marked as a heading (a PDF's large type) is a heading
    even when its words alone would make it text (twelve words, a full stop),
    marked lines of one level in a row are one heading, and unmarked lines are
    told apart by their shape as before."""
    from documents.generation.sentences import Kind, split_sentences

    text = (
        "Rock pools on the northern shore and the small animals that\n"
        "live there.\n"
        "The sea covers them about twice a day.\n"
        "Crabs shelter there at low tide.\n"
        "Sand dunes\n"
        "Marram grass binds the sand."
    )
    second = text.index("live")
    marks = ((0, second - 1, 3), (second, second + len("live there."), 3))
    marked = split_sentences(text, marks)
    assert [(u.kind, u.text) for u in marked] == [
        (
            Kind.HEADING,
            "Rock pools on the northern shore and the small animals that live there.",
        ),
        (Kind.SENTENCE, "The sea covers them about twice a day."),
        (Kind.SENTENCE, "Crabs shelter there at low tide."),
        (Kind.HEADING, "Sand dunes"),
        (Kind.SENTENCE, "Marram grass binds the sand."),
    ]
    assert marked[0].start == 0 and marked[0].end == second + len("live there.")
    unmarked = split_sentences(text)
    assert unmarked[0].kind == Kind.SENTENCE
    assert unmarked[0].text.startswith("Rock pools")


def test_a_definition_names_the_term_and_a_type_needs_the_topic():
    """ "What is X?" asks for a sentence defining X ("… known as an
    abomination", "This is called lobular carcinoma in situ (LCIS)"), not one
    where "is a" defines something else; "how large/far/old" asks for a figure."""
    what = words.answer_types("What is an abomination?")
    wanted = words.terms("What is an abomination?")
    assert (
        words.typed(
            "The result is an unholy union known as an abomination.", what, wanted
        )
        == 1
    )
    assert words.typed("The company was a sponsor of the team.", what, wanted) == 0
    lcis = words.terms("What is LCIS?")
    assert (
        words.typed(
            "This is called lobular carcinoma in situ (LCIS).",
            words.answer_types("What is LCIS?"),
            lcis,
        )
        == 1
    )
    for question in ("How large is the store?", "How far apart must they be?"):
        assert words.answer_types(question)
    # "When does the test pass?" asks for a condition or a date, "When was it
    # founded?" for a date.
    general = words.answer_types("When does the test pass?")
    passes = words.terms("When does the test pass?")
    assert words.typed("The test passes if the border is dashed.", general, passes)
    past = words.answer_types("When was the test passed?")
    assert not words.typed("The test passes if the border is dashed.", past, passes)
    assert words.typed("It passed on April 4, 1975.", past, passes)
    # "What does saturation measure?" asks the meaning of "saturation".
    assert words.defined_term("What does saturation measure?") == {"satur"}
    assert words.defined_term("What is white-box monitoring?") == words.terms(
        "white-box monitoring"
    )
    assert not words.defined_term("What does the FAA propose for the airplanes?")
    # A question with a negation asks for what failed or is missing.
    failed = "Which treatments did not work?"
    negated = words.answer_types(failed)
    assert words.typed(
        "Several treatments showed no efficacy.", negated, words.terms(failed)
    )
    assert not words.typed(
        "Several treatments showed efficacy.", negated, words.terms(failed)
    )


def test_what_is_asked_for_counts_only_on_topic(faq):
    """A unit holding none of the question's words (nor its heading) gets
    nothing for holding a figure or a definition: off-topic questions ("What
    is the population of Lagos?") found those everywhere."""
    question = "How many people live in Lagos?"
    found = evidence.gather(question, evidence_chunks(faq, question))
    minutes = next(i for i in found if i.text == "It takes about 20 minutes.")
    assert minutes.typed == 0
    asked = evidence.gather("How many minutes?", evidence_chunks(faq, "minutes"))
    assert next(i for i in asked if "20 minutes" in i.text).typed == 1


def test_a_tables_header_row_is_a_row_too(make_channel, fake_embedder):
    """A Word table's first row is its Markdown header by the reader's
    convention: it titles the rows under it and can be quoted itself ("What is
    in the top left cell of the table?")."""
    channel = make_channel("cells")
    add_document(
        channel,
        title="Tables",
        pages=[
            "Above\n\n| Top left | Top right |\n| --- | --- |\n"
            "| Bottom left | Bottom right |\n\nBelow"
        ],
    )
    question = "What is in the top left cell of the table?"
    found = evidence.gather(question, evidence_chunks(channel, question))
    header = next(i for i in found if i.text == "| Top left | Top right |")
    assert header.lexical > 0


def test_a_ledger_row_answers_a_question_naming_its_date(make_channel, fake_embedder):
    """A bank statement's row ("01Aug2018 Assisted Deposit 32,414.50 68,769.42")
    is a line of figures: evidence for a question naming a date ("… on 1 August
    2018?"), as for one asking for a figure, and not for one doing neither."""
    channel = make_channel("ledger")
    add_document(
        channel,
        title="Statement",
        pages=[
            "Account activity\n\n31Jul2018 Balance Forward 99,878.08 -\n"
            "01Aug2018 Assisted Deposit 32,414.50 68,769.42 -\n"
            "02Aug2018 Clearing Cheque 4984 48.08 70,317.50 -\n\n"
            "Deposits are credited the same business day."
        ],
    )
    row = "01Aug2018 Assisted Deposit 32,414.50 68,769.42 -"
    assert words.names_date("What was the balance on 1 August 2018?")
    assert not words.names_date("What was the balance after the assisted deposit?")
    for question, found_row in (
        ("What was the balance after the assisted deposit on 1 August 2018?", True),
        ("What happened to the assisted deposit?", False),
    ):
        found = evidence.gather(question, evidence_chunks(channel, question))
        assert (row in [i.text for i in found]) is found_row, question


def test_the_asked_for_kind_counts_fully_only_next_to_the_questions_words():
    """A condition, a date or a negation counts fully next to what the question
    names, half elsewhere: "The test passes if …" answers "When does the test
    pass?", "If the reading system has no viewport …" does not (issue 22)."""
    question = "When does the styling test pass?"
    asked, wanted = words.answer_types(question), words.terms(question)
    assert words.typed("The test passes if the equation is yellow.", asked, wanted) == 1
    assert words.typed("If the reader has no viewport, mark it.", asked, wanted) == 0.5
    question = "Which proposed treatments did not work?"
    asked, wanted = words.answer_types(question), words.terms(question)
    failed = "Several proposed treatments showed no appreciable efficacy."
    assert words.typed(failed, asked, wanted) == 1.0
    # "not only … but also" adds; it denies nothing.
    assert words.typed("We need not only masks but also care.", asked, wanted) == 0


def test_numbers_of_tables_and_sections_are_no_figures():
    many = words.answer_types("How many datasets are there?")
    wanted = words.terms("How many datasets are there?")
    assert words.typed("Unlike other datasets (see Table 2).", many, wanted) == 0
    assert words.typed("As §5 and Fig. 3 show for datasets.", many, wanted) == 0
    assert words.typed("We collected 12 datasets.", many, wanted) == 1.0


def test_refusal_rests_on_relevance_not_on_the_kind_asked_for(faq):
    """A sentence holding a duration gets the answer-type credit in its score,
    but whether anything is quoted depends on `relevance` alone: an answer
    whose only merit is holding the asked-for kind is refused."""
    question = "How long does a scan take?"
    found = evidence.gather(question, evidence_chunks(faq, question))
    duration = next(i for i in found if "20 minutes" in i.text)
    assert duration.typed == 1.0
    assert evidence.score(duration) > evidence.relevance(duration)
    between = (evidence.relevance(duration) + evidence.score(duration)) / 2
    best = max(evidence.relevance(i) for i in found)
    chosen = evidence.select(found, min_score=min(between, best + 0.01), max_chars=500)
    assert all(evidence.relevance(c) >= min(between, best + 0.01) for c in chosen)
    assert evidence.select(found, min_score=best + 0.01, max_chars=500) == []
    assert evidence.select(found, min_score=best, max_chars=500)


def test_which_questions_name_what_they_ask_for():
    """ "Which judge …?" asks for a judge: the unit naming one answers it
    rather than one about the lawsuit (issue 22's held-out questions)."""
    assert words.focus_terms("Which judge was the lawsuit assigned to?") == {"judg"}
    assert words.focus_terms("To which judge was the case moved?") == {"judg"}
    assert words.focus_terms("What value types can a field have?") == {"valu", "type"}
    assert words.focus_terms("What is the deadline?") == frozenset()
    assert words.focus_terms("How do I stop a key?") == frozenset()


def test_how_many_wants_the_figure_next_to_what_is_counted():
    """ "How many summaries are in Multi-LexSum?" counts summaries: a figure
    next to "Multi-LexSum" about words is not the count."""
    question = "How many summaries are in the Multi-LexSum dataset?"
    asked, wanted = words.answer_types(question), words.terms(question)
    counted = words.counted_terms(question)
    assert counted == {"summari"}
    words_ = "Multi-LexSum sources run over 75k words, far longer."
    assert words.typed(words_, asked, wanted, counted) == 0.5
    assert words.typed("It holds 9,280 summaries.", asked, wanted, counted) == 1.0
