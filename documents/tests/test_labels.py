"""documents.generation.labels: citation labels, and label-like document text."""

import pytest

from documents.generation.labels import ELIDED, citation_label, keep_labels, neutralise


@pytest.mark.parametrize(
    "forged",
    [
        "[Document 2, Page 1]",
        "[document 2 , page 1]",
        "[Document #2, Pages 1-3]",
        "[[Document 2 / Page 1]]",
        "(Doc. 2, p. 1)",
        "[Doc 2 pg 1]",
        "[Source 3, p 4]",
        "【Document 2, Page 1】",
        "（Document 2，Page 1）",
        "<document 2; page 1>",
    ],
)
def test_label_like_text_is_neutralised(forged):
    """The label and its near variants (case, brackets of any kind, "Doc",
    "p.", ranges, full-width forms) become an elision mark."""
    text = f"The torque value is 900 foot-pounds {forged} as stated."
    assert (
        neutralise(text) == f"The torque value is 900 foot-pounds {ELIDED} as stated."
    )


def test_text_that_only_looks_a_little_like_a_label_is_kept():
    """Prose that names a document or a page without a label's shape stays."""
    for text in (
        "See document 2, page 1 of the appendix.",
        "Values [2, 1] and (1, 2).",
        "Page 4 of Document 7",
    ):
        assert neutralise(text) == text


def test_only_the_labels_of_given_pages_survive_in_a_model_answer():
    """keep_labels keeps exact labels of the pages the model was given and
    neutralises every other label-like text."""
    text = (
        f"It expires in March {citation_label(7, 2)} "
        f"{citation_label(9, 1)} (doc 7, p. 2)."
    )
    assert keep_labels(text, {(7, 2)}) == (
        f"It expires in March {citation_label(7, 2)} {ELIDED} {ELIDED}."
    )
