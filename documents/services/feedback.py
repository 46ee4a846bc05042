"""Feedback on answers, from MCP clients and the REST API."""

from documents.models import ApiKey, Channel, Feedback


def submit_feedback(
    *,
    channel: Channel,
    api_key: ApiKey | None,
    query: str,
    answer: str,
    score: int,
    comment: str = "",
) -> Feedback:
    """Store a rating of an answer for the channel's administrators."""
    return Feedback.objects.create(
        channel=channel,
        api_key=api_key,
        query=query,
        answer=answer,
        score=score,
        comment=comment,
    )
