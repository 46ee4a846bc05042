"""submit_feedback."""

import pytest

from documents.models import ApiKey, Feedback

pytestmark = pytest.mark.django_db


def test_submit_feedback_stores_a_rating(mcp_any, handbook):
    """The rating is stored for the channel with the calling key."""
    result = mcp_any.call_tool_expecting_success(
        "submit_feedback",
        {"query": "Holidays?", "answer": "25 days", "score": 5, "comment": "Spot on"},
    )
    feedback = Feedback.objects.get(pk=result["structuredContent"]["feedback_id"])
    assert (feedback.channel, feedback.score, feedback.comment) == (
        handbook,
        5,
        "Spot on",
    )
    assert feedback.api_key == ApiKey.objects.get(name="handbook agent")


@pytest.mark.parametrize(
    "arguments, expected",
    [
        ({"query": "q", "answer": "a", "score": 9}, "score"),
        ({"query": "q", "answer": "a"}, "score is required"),
        ({"query": "", "answer": "a", "score": 3}, "query"),
    ],
)
def test_submit_feedback_rejects_bad_ratings(mcp, arguments, expected):
    """Scores outside 1-5 and missing fields are tool errors; nothing is stored."""
    text = mcp.call_tool_expecting_error("submit_feedback", arguments)
    assert expected in text
    assert not Feedback.objects.filter(channel__slug="handbook").exists()
