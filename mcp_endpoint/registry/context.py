"""What a tool, resource or prompt is given (the call's context) and what a
tool gives back (its result)."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from documents.access import Caller
from documents.models import Channel

LOG_LEVELS = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


@dataclass
class CallContext:
    """Everything a tool, resource or prompt needs to know about the current call."""

    channel: Channel
    # Who is calling (a key, a sign-in token and its grant, the playground's
    # signed-in person): what links are signed for and feedback is kept under.
    caller: Caller
    era: str  # "legacy" or "modern"
    protocol_version: str
    base_url: str  # scheme://host of the request, for absolute links
    client_capabilities: dict = field(default_factory=dict)
    # The request comes from a client that renders MCP Apps (protocol.extensions).
    apps: bool = False
    progress_token: str | int | None = None
    log_level: str | None = None
    emit: Callable[[dict], Awaitable[None]] | None = None
    # Multi round-trip requests (2026-07-28): the client's answers to the input
    # requests of an earlier `input_required` result, and the state it echoes.
    input_responses: dict | None = None
    request_state: str | None = None
    # A tools/call's tool and input schema (registry.ToolTarget), resolved once.
    tool_target: Any = None

    async def notify(self, method: str, params: dict) -> None:
        if self.emit is not None:
            await self.emit({"jsonrpc": "2.0", "method": method, "params": params})

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress, when the client asked for it with a progress token."""
        if self.progress_token is None:
            return
        params: dict[str, Any] = {
            "progressToken": self.progress_token,
            "progress": progress,
        }
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message to the client.

        Modern era: only when the request carried a log level, and at or above it.
        Legacy era: a stateless server cannot remember logging/setLevel, so it
        sends everything.
        """
        if self.era == "modern":
            if self.log_level not in LOG_LEVELS:
                return
            if LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
                return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger:
            params["logger"] = logger
        await self.notify("notifications/message", params)


@dataclass
class ToolResult:
    """The outcome of a tool call: content blocks, optional structured content."""

    content: list[dict]
    structured: Any = None
    is_error: bool = False

    def as_dict(self) -> dict:
        result: dict[str, Any] = {"content": self.content}
        if self.structured is not None:
            result["structuredContent"] = self.structured
        if self.is_error:
            result["isError"] = True
        return result


def text_block(text: str) -> dict:
    return {"type": "text", "text": text}
