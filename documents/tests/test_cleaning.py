"""Clean text: one clean-up for every format, with line offsets carried over."""

from documents.ingestion.cleaning import Vocabulary, clean_page, clean_text


def test_line_end_hyphens_are_joined_and_real_hyphens_kept():
    """PDFium's end-of-line hyphen (U+0002, or U+FFFE) joins a word broken in
    two; a compound of two words the document uses, a name or a code keeps its
    hyphen; the document's own spelling decides first."""
    vocabulary = Vocabulary()
    vocabulary.add("A dual encoder. Passage retrieval. A state-of-the-art model.")
    text = clean_text(
        "substan\x02tially dual\x02encoder BERT\x02Base COVID\ufffe19 "
        "infor\x02\r\nmation state-of-the\x02art",
    )
    # Without the document's words, "dual" and "encoder" look like halves of
    # one word; "state-of-the" is a compound already, so it goes on.
    assert text == (
        "substantially dualencoder BERT-Base COVID-19 information state-of-the-art"
    )
    cleaned, _ = clean_page(
        "substan\x02tially dual\x02encoder state-of-the\x02art",
        [],
        vocabulary=vocabulary,
    )
    assert cleaned == "substantially dual-encoder state-of-the-art"


def test_ligatures_and_compatibility_characters_are_folded():
    """Ligatures, full-width and mathematical letters and no-break spaces become
    plain letters and spaces; superscripts, fractions and circled numbers keep
    their meaning; combining accents are composed."""
    assert clean_text("ﬁnance ﬂow ＡＢＣ１ 𝐱𝑦 a\u00a0b x² ½ ① e\u0301t\u00e9") == (
        "finance flow ABC1 xy a b x² ½ ① été"
    )


def test_control_format_and_private_use_characters_are_dropped():
    """NUL and other controls, private-use and tag characters disappear;
    zero-width joiners that scripts need stay; spaces collapse; blank lines are
    at most one."""
    assert clean_text("a\x00b\x07c \uf8eb d\U000e0041e \U000f0001f") == "abc de f"
    assert clean_text("می\u200cخواهم") == "می\u200cخواهم"
    assert clean_text("  one   two \n\n\n\n three  ") == "one two\n\nthree"
    assert (
        clean_text("# Title\n\n    code  \n", keep_layout=True) == "# Title\n\n    code"
    )


def test_line_offsets_follow_the_cleaned_text():
    """Each line's offsets point at the same words after clean-up: a word joined
    across two lines ends the first line and starts the second."""
    raw = "  The ﬁrst  line con\x02tinues\nhere, then  a\x00 third\n\nline."
    breaks = [0, raw.index("\x02") + 1, raw.index("\n"), raw.index("\n\n"), len(raw)]
    lines = [
        [breaks[0], breaks[1], 0.1, 0.1, 0.9, 0.12],
        [breaks[1], breaks[2], 0.1, 0.13, 0.5, 0.15],
        [breaks[2] + 1, breaks[3], 0.1, 0.16, 0.9, 0.18],
        [breaks[3] + 2, breaks[4], 0.1, 0.19, 0.2, 0.21],
    ]
    text, moved = clean_page(raw, lines)
    assert text == "The first line continues\nhere, then a third\n\nline."
    assert [text[start:end] for start, end, *_ in moved] == [
        "The first line con",
        "tinues",
        "here, then a third",
        "line.",
    ]
    assert [box for _, _, *box in moved] == [line[2:] for line in lines]


def test_lines_left_empty_by_the_clean_up_are_dropped():
    """A line of control characters only has nothing to point at any more."""
    text, moved = clean_page(
        "word\n\x00\x01\nnext",
        [[0, 4, 0, 0, 1, 0.1], [5, 7, 0, 0.1, 1, 0.2], [8, 12, 0, 0.2, 1, 0.3]],
    )
    assert text == "word\n\nnext"
    assert [text[s:e] for s, e, *_ in moved] == ["word", "next"]
