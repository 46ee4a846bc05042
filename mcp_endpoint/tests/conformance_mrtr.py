"""Multi round-trip (MRTR, 2026-07-28) fixtures of the conformance suite: tools and a
prompt that answer `input_required` first and finish once the client answers."""

from typing import Any

from django.core import signing

from mcp_endpoint.protocol.errors import INVALID_PARAMS, JsonRpcError
from mcp_endpoint.registry import CallContext, ToolResult, text_block
from mcp_endpoint.tests.conformance_fixtures import (
    Prompt,
    RawResult,
    fixture_tool,
    user_text,
)

STATE_SALT = "quire.conformance.request-state"


def elicit(message: str, field: str, kind: str = "string") -> dict:
    return {
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field],
            },
        },
    }


def sample(text: str, max_tokens: int) -> dict:
    return {
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens,
        },
    }


LIST_ROOTS = {"method": "roots/list", "params": {}}


def input_required(requests: dict, state: dict | None = None) -> ToolResult:
    raw: dict[str, Any] = {"resultType": "input_required", "inputRequests": requests}
    if state is not None:
        raw["requestState"] = signing.dumps(state, salt=STATE_SALT)
    return RawResult(raw)


def read_state(ctx: CallContext) -> dict | None:
    """The echoed requestState, checked for tampering (HMAC via Django signing)."""
    if ctx.request_state is None:
        return None
    try:
        return signing.loads(ctx.request_state, salt=STATE_SALT, max_age=600)
    except signing.BadSignature:
        raise JsonRpcError(
            INVALID_PARAMS, "requestState failed its integrity check"
        ) from None


def answers(ctx: CallContext, *keys: str) -> dict | None:
    """The responses for all `keys`, or None when any is missing or malformed."""
    responses = ctx.input_responses or {}
    if all(isinstance(responses.get(key), dict) for key in keys):
        return {key: responses[key] for key in keys}
    return None


def elicited(response: dict, field: str) -> str:
    return str((response.get("content") or {}).get(field, ""))


def sampled(response: dict) -> str:
    content = response.get("content") or {}
    if isinstance(content, list):
        content = content[0] if content else {}
    return str(content.get("text", ""))


ASK_NAME = elicit("What is your name?", "name")


async def ir_elicitation(args, ctx):
    got = answers(ctx, "user_name")
    if got is None:
        return input_required({"user_name": ASK_NAME})
    return ToolResult([text_block(f"Hello, {elicited(got['user_name'], 'name')}!")])


async def ir_sampling(args, ctx):
    got = answers(ctx, "capital_question")
    if got is None:
        return input_required(
            {"capital_question": sample("What is the capital of France?", 100)}
        )
    return ToolResult(
        [text_block(f"The model said: {sampled(got['capital_question'])}")]
    )


async def ir_list_roots(args, ctx):
    got = answers(ctx, "client_roots")
    if got is None:
        return input_required({"client_roots": LIST_ROOTS})
    roots = got["client_roots"].get("roots") or []
    uris = ", ".join(str(root.get("uri")) for root in roots if isinstance(root, dict))
    return ToolResult([text_block(f"Client roots: {uris or 'none'}")])


async def ir_request_state(args, ctx):
    state = read_state(ctx)
    got = answers(ctx, "confirm")
    if got is None or state != {"step": "confirm"}:
        confirm = elicit("Please confirm", "ok", "boolean")
        return input_required({"confirm": confirm}, {"step": "confirm"})
    return ToolResult([text_block("state-ok: confirmation received")])


async def ir_multiple_inputs(args, ctx):
    state = read_state(ctx)
    got = answers(ctx, "user_name", "greeting", "client_roots")
    if got is None or state != {"step": "all"}:
        requests = {
            "user_name": ASK_NAME,
            "greeting": sample("Generate a greeting", 50),
            "client_roots": LIST_ROOTS,
        }
        return input_required(requests, {"step": "all"})
    name = elicited(got["user_name"], "name")
    return ToolResult([text_block(f"{sampled(got['greeting'])} {name}".strip())])


async def ir_multi_round(args, ctx):
    state = read_state(ctx) or {}
    if state.get("round") == 2 and (got := answers(ctx, "step2")):
        colour = elicited(got["step2"], "color")
        return ToolResult([text_block(f"{state['name']} likes {colour}.")])
    if state.get("round") == 1 and (got := answers(ctx, "step1")):
        ask = elicit("Step 2: What is your favorite color?", "color")
        name = elicited(got["step1"], "name")
        return input_required({"step2": ask}, {"round": 2, "name": name})
    ask = elicit("Step 1: What is your name?", "name")
    return input_required({"step1": ask}, {"round": 1})


async def ir_tampered_state(args, ctx):
    state = read_state(ctx)
    got = answers(ctx, "confirm")
    if got is None or state != {"step": "tamper-check"}:
        confirm = elicit("Please confirm", "ok", "boolean")
        return input_required({"confirm": confirm}, {"step": "tamper-check"})
    return ToolResult([text_block("state-ok")])


async def ir_capabilities(args, ctx):
    if ctx.input_responses:
        return ToolResult([text_block("Thanks for the input.")])
    requests = {}
    if "sampling" in ctx.client_capabilities:
        requests["sample"] = sample("Say hello", 20)
    if "elicitation" in ctx.client_capabilities:
        requests["ask"] = ASK_NAME
    if "roots" in ctx.client_capabilities:
        requests["roots"] = LIST_ROOTS
    if not requests:
        return ToolResult([text_block("The client declared no input capability.")])
    return input_required(requests)


class InputRequiredPrompt(Prompt):
    """A prompt that first asks the client for context."""

    name = "test_input_required_result_prompt"

    async def get(self, arguments, ctx):
        got = answers(ctx, "user_context")
        if got is None:
            ask = elicit("What context should the prompt use?", "context")
            return input_required({"user_context": ask}).raw
        context = elicited(got["user_context"], "context")
        return [user_text(f"Use this context: {context}")]


def mrtr_fixtures() -> list[Any]:
    tools = {
        "test_input_required_result_elicitation": ir_elicitation,
        "test_input_required_result_sampling": ir_sampling,
        "test_input_required_result_list_roots": ir_list_roots,
        "test_input_required_result_request_state": ir_request_state,
        "test_input_required_result_multiple_inputs": ir_multiple_inputs,
        "test_input_required_result_multi_round": ir_multi_round,
        "test_input_required_result_tampered_state": ir_tampered_state,
        "test_input_required_result_capabilities": ir_capabilities,
    }
    return [
        *(
            fixture_tool(name, "Asks the client for input (MRTR).", handler)
            for name, handler in tools.items()
        ),
        InputRequiredPrompt(),
    ]
