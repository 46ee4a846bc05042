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


# --- The examples of issue 22 ----------------------------------------------------


def test_vs_at_the_start_of_a_line_under_a_table_stays_in_its_sentence(shared_data):
    """Under the LayoutParser paper's model-zoo table, the footnote "(the
    trade-off between accuracy\\nvs. computational cost)" is one sentence: the
    table's rows around it never cut it at the line break, so no unit starts
    with "vs." (issue 22: a quote began "vs. computational cost). For …")."""
    path = shared_data / "pdfs/text/unstructured__layout-parser-paper-with-table.pdf"
    units = texts(page_text(path, 1))
    assert not any(unit.startswith("vs.") for unit in units)
    assert any(
        "the trade-off between accuracy vs. computational cost)." in unit
        for unit in units
    )


def test_abbreviations_never_end_a_sentence():
    """ "vs.", "e.g.", "i.e.", "No.", "Fig.", "et al." and "cf." stay inside
    their sentence, also when a line break follows them."""
    text = (
        "Speed vs.\nCost matters, e.g.\nLatency, i.e. the wait. See Fig.\n"
        "3 and No.\n5 in Smith et al.\n(2020), cf.\nthe table above."
    )
    assert texts(text) == [
        "Speed vs. Cost matters, e.g. Latency, i.e. the wait.",
        "See Fig. 3 and No. 5 in Smith et al. (2020), cf. the table above.",
    ]


def test_verse_lines_are_units(shared_data):
    """A poem's lines, each a paragraph of its own (as the Waste Land's EPUB
    has them), are quotable lines, not headings: "April is the cruellest month,
    breeding" can be quoted (issue 22)."""
    text = (
        "## I. THE BURIAL OF THE DEAD\n\n"
        "April is the cruellest month, breeding\n\n"
        "Lilacs out of the dead land, mixing\n\n"
        "Memory and desire, stirring\n\n"
        "Dull roots with spring rain.\n\n"
        "Winter kept us warm, covering\n"
    )
    units = split_sentences(text)
    assert [u.text for u in units if u.kind == Kind.HEADING] == [
        "## I. THE BURIAL OF THE DEAD"
    ]
    april = next(u for u in units if u.text.startswith("April"))
    assert april.text == "April is the cruellest month, breeding"
    assert april.kind == Kind.LINE and april.quotable


def test_a_figure_caption_is_a_caption_not_a_sentence():
    """ "Figure 7-26. Self-locking nuts." under the handbook's drawing is one
    caption, never a quotable sentence "Self-locking nuts." (issue 22)."""
    text = (
        "Elastic anchor nut\n"
        "Figure 7-26. Self-locking nuts. Figure 7-27. Stainless steel "
        "self-locking nut.\n7-45"
    )
    units = split_sentences(text)
    assert "Self-locking nuts." not in [u.text for u in units]
    captions = [u.text for u in units if u.kind == Kind.CAPTION]
    assert captions[0] == "Figure 7-26. Self-locking nuts."
    assert captions[1].startswith("Figure 7-27. Stainless steel self-locking nut.")
    assert not any(u.quotable for u in units if u.kind == Kind.CAPTION)


def test_a_caption_after_the_drawings_labels_is_a_caption():
    """When the drawing's labels run into "Figure 7-26." (as on the handbook's
    page), the text after the label is still the caption, not a sentence."""
    text = (
        "This\nTightened nut\nUntightened nut\nElastic anchor nut\n"
        "Figure 7-26. Self-locking nuts."
    )
    units = split_sentences(text)
    nuts = next(u for u in units if u.text.endswith("Self-locking nuts."))
    assert nuts.kind == Kind.CAPTION and not nuts.quotable
    text = "The fit is a straight line as shown in Fig. 5. It follows Langmuir."
    assert texts(text, Kind.SENTENCE)[-1] == "It follows Langmuir."


def test_a_tables_rows_are_rows_under_their_header():
    """A spreadsheet or Word table, read as a Markdown table, is a header that
    titles its rows and one row per line; the rule between them is nothing."""
    text = (
        "# Main\n\n"
        "| Person | Age | Location |\n"
        "| --- | --- | --- |\n"
        "| Anton Antich | 23 | Switzerland |\n"
        "| James Bond | 35 | Moscow |\n"
    )
    units = split_sentences(text)
    assert [(u.kind, u.text) for u in units] == [
        (Kind.HEADING, "# Main"),
        (Kind.HEADING, "| Person | Age | Location |"),
        (Kind.ROW, "| Anton Antich | 23 | Switzerland |"),
        (Kind.ROW, "| James Bond | 35 | Moscow |"),
    ]
    assert all(u.table_row and u.quotable for u in units[2:])
