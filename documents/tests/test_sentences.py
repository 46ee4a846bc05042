"""documents.generation.sentences: the units an answer can quote."""

from documents.generation.sentences import Kind, split_sentences
from documents.tests.shared_pdfs import page_text


def texts(text: str, kind: Kind | None = None) -> list[str]:
    return [u.text for u in split_sentences(text) if kind is None or u.kind == kind]


def test_initials_and_abbreviations_do_not_end_a_sentence():
    """Names with initials, "ESQ.", "No." before a number and "U.S.C." stay
    inside their sentence (issue 14: "STEVEN E. MERCER, ESQ." became "MERCER,
    ESQ., Deputy Attorney General…")."""
    text = (
        "The brief was signed by STEVEN E. MERCER, ESQ., Deputy Attorney General, "
        "for the state. The case was assigned to Judge Susan J. Dlott. It cites "
        "42 U.S.C. §1981 and Docket No. FAA-2020-0686 in full."
    )
    assert texts(text) == [
        "The brief was signed by STEVEN E. MERCER, ESQ., Deputy Attorney General, "
        "for the state.",
        "The case was assigned to Judge Susan J. Dlott.",
        "It cites 42 U.S.C. §1981 and Docket No. FAA-2020-0686 in full.",
    ]


def test_a_shared_papers_judges_keep_their_initials(shared_data):
    """On page 3 of the Multi-LexSum paper, "Judge Susan J. Dlott" and "Judge S.
    Arthur Spiegel" are never cut at their initials."""
    path = shared_data / "pdfs/text/papermage__2206.10883v3.pdf"
    units = texts(page_text(path, 3))
    assert any("Judge Susan J. Dlott." in unit for unit in units)
    assert any("Judge S. Arthur Spiegel." in unit for unit in units)
    assert not any(unit.endswith((" J.", " S.")) for unit in units)


def test_offsets_point_into_the_text():
    """Each unit's start/end cut its own text out of the passage (whitespace
    collapsed in `text`)."""
    text = "First line of a\nsentence here. Second one!\n\nThird,\nlast one."
    for unit in split_sentences(text):
        assert " ".join(text[unit.start : unit.end].split()) == unit.text


def test_headings_questions_and_short_answers():
    """A PDF heading on a line of its own, a Markdown heading and a table of
    contents line are headings; a question is a question; "No." is joined to
    the sentence it begins."""
    text = (
        "# Quire overview\n\n"
        "Contents ........................ 3\n"
        "The nut is tight.\n"
        "Boots Self-Locking Nut\n"
        "The Boots self-locking nut is of one piece, all-metal\n"
        "construction designed to hold tight.\n\n"
        "Does Quire need an internet connection?\n"
        "No. The default embedding model runs offline.\n"
    )
    assert texts(text, Kind.HEADING) == [
        "# Quire overview",
        "Contents ........................ 3",
        "Boots Self-Locking Nut",
    ]
    assert texts(text, Kind.QUESTION) == ["Does Quire need an internet connection?"]
    assert "No. The default embedding model runs offline." in texts(text, Kind.SENTENCE)
    assert not any(u.quotable for u in split_sentences(text) if u.text == "No.")


def test_a_wrapped_line_is_not_a_heading():
    """A short line that runs on into the next (ends in "the", a comma, or the
    next line starts in lower case) is part of its sentence."""
    text = (
        "Most people diagnosed with\nbreast cancer do not have a\nfamily history.\n"
        "Ask the\nDoctor about it. Call Cancer Council,\nToday or tomorrow."
    )
    assert texts(text, Kind.HEADING) == []


def test_table_rows_are_rows_and_contents_lines_with_figures_too():
    """Lines of figures are rows (quotable for questions asking for a figure),
    also when dot leaders run through them; the table's header line titles
    them."""
    text = (
        "State Permit Handgun Totals\n"
        "Alabama 18,870 23,022 71,137\n"
        "Texas 21,550 56,941 146,982\n"
        "AFM revisions ........ 1 work-hour × $85 per hour = $85 ...... $6,205.\n"
    )
    rows = texts(text, Kind.ROW)
    assert "Texas 21,550 56,941 146,982" in rows
    assert any(row.startswith("AFM revisions") for row in rows)
    assert texts(text, Kind.HEADING) == ["State Permit Handgun Totals"]
