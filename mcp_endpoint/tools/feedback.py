"""The one tool that writes: ratings of answers, for the channel's administrators."""

import copy

from asgiref.sync import sync_to_async
from pydantic import BaseModel, ConfigDict, Field

from documents.limits import FeedbackAnswer, FeedbackComment, FeedbackQuery, Score
from documents.results import FeedbackReceipt
from documents.services import feedback as services
from mcp_endpoint import schemas
from mcp_endpoint.registry import CallContext, Tool, ToolResult
from mcp_endpoint.tools.documents import json_result


class SubmitFeedback(Tool):
    """Rate an answer you got from this collection (for example from rag_search),
    so its administrators can improve it.

    score: 1 (wrong or useless) to 5 (correct and complete). Add a short comment
    saying what was wrong or missing.
    """

    name = "submit_feedback"
    title = "Submit feedback"
    read_only = False
    destructive = False
    idempotent = False

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")
        query: FeedbackQuery = Field(description="The question that was asked.")
        answer: FeedbackAnswer = Field(description="The answer being rated.")
        score: Score
        comment: FeedbackComment = Field("", description="Optional remarks.")

    def output_schema(self, channel) -> dict:
        return copy.deepcopy(schemas.FEEDBACK_OUTPUT_SCHEMA)

    async def run(self, args: Args, ctx: CallContext) -> ToolResult:
        feedback = await sync_to_async(services.submit_feedback)(
            channel=ctx.channel,
            api_key=ctx.caller.api_key,
            query=args.query,
            answer=args.answer,
            score=args.score,
            comment=args.comment,
        )
        return json_result(FeedbackReceipt(feedback_id=feedback.pk).model_dump())
