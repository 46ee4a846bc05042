"""The staff playground: try a channel's MCP tools in the browser (views).

Staff pick a channel, filter values, a query and a tool; the page shows the
results as people read them beside the exact JSON-RPC reply an MCP client would
receive, the tool's input schema for the channel and an `mcpServers` snippet.
"""

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from django.views.decorators.http import require_GET, require_http_methods

from documents.access import Caller
from documents.models import Channel
from documents.services.connect import client_configurations
from mcp_endpoint.registry import registry
from playground import calls
from playground.forms import PAGE_SIZE, PLAYGROUND_TOOLS, read_request

# Stricter than the site's policy: the playground has no inline style either.
PLAYGROUND_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}


def _base_url(request: HttpRequest) -> str:
    return f"{request.scheme}://{request.get_host()}"


# The playground reads documents as the admin's page preview does, so it needs
# the same model permission, and shows only the channels the user may read.
REQUIRED_PERMISSION = "documents.view_document"


def _caller(request: HttpRequest) -> Caller:
    return Caller.for_session(request, via="playground")


def _channels(request: HttpRequest):
    return _caller(request).readable_channels().order_by("name")


def playground_view(view):
    """Staff only, with the admin's document permission, under the stricter CSP."""
    checked = permission_required(REQUIRED_PERMISSION, raise_exception=True)(view)
    return staff_member_required(csp_override(PLAYGROUND_CSP)(checked))


@playground_view
@require_GET
def choose_channel(request: HttpRequest) -> HttpResponse:
    """/playground/?channel=<slug> opens that channel; without one, the list."""
    channel = _channels(request).filter(slug=request.GET.get("channel") or "").first()
    if channel is not None:
        return redirect("playground:channel", slug=channel.slug)
    context = {
        **admin.site.each_context(request),
        "title": "Playground",
        "channels": _channels(request),
    }
    return TemplateResponse(request, "playground/index.html", context)


@playground_view
@require_http_methods(["GET", "POST"])
def channel_playground(request: HttpRequest, slug: str) -> HttpResponse:
    """The form for one channel (GET, filled in from the query string) and,
    when it is posted, the tool's reply. Tools run only on POST, behind the CSRF
    check: a link from another site can't make the server call a chat model."""
    channel = get_object_or_404(_channels(request), slug=slug)
    titles = {
        tool.name: tool.title
        for tool in registry.tools(channel)
        if tool.name in PLAYGROUND_TOOLS
    }
    tools = list(titles)
    params = request.POST if request.method == "POST" else request.GET
    asked = read_request(channel, params, tools)
    context = {
        **admin.site.each_context(request),
        "title": f"Playground: {channel.name}",
        "channel": channel,
        "channels": _channels(request),
        "tools": titles.items(),
        "tool_title": titles.get(asked.tool, ""),
        "asked": asked,
        "page_size": PAGE_SIZE,
        "mcp_servers": client_configurations(
            mcp_url=_base_url(request) + channel.mcp_path,
            key="<your API key>",
            server_name=f"quire-{channel.slug}",
        ).mcp_servers,
    }
    definition = calls.tool_definition(channel, asked.tool) if asked.tool else None
    if definition is not None:
        context["input_schema"] = calls.pretty(definition["inputSchema"])
        context["tool_description"] = definition["description"]
    if asked.tool and request.method == "POST":
        caller = _caller(request)
        call = calls.call_tool(
            channel,
            asked.tool,
            asked.arguments,
            base_url=_base_url(request),
            caller=caller,
        )
        links_to = calls.PageLinks(channel, caller, _base_url(request))
        reply, cut = calls.shortened(call.reply)
        context.update(
            call=call,
            request_json=calls.pretty(call.request),
            reply_json=calls.pretty(reply),
            reply_shortened=cut,
            **_readable(channel, asked, call, links_to),
        )
    return TemplateResponse(request, "playground/channel.html", context)


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return str(value)


def _readable(
    channel: Channel, asked, call: calls.ToolCall, links_to: calls.PageLinks
) -> dict:
    """Template values for the readable rendering of a successful reply."""
    if call.protocol_error or call.tool_error:
        return {}
    data = call.structured or {}
    if asked.tool == "retrieve_text_chunks":
        terms = calls.query_terms(asked.query)
        chunks = [
            {
                **chunk,
                "html": calls.highlight(chunk["text"], terms),
                "url": links_to.url(chunk["document_id"], chunk["page_number"]),
            }
            for chunk in data.get("chunks", [])
        ]
        return {"chunks": chunks}
    if asked.tool == "rag_search":
        # Citations open the page a person would get from the link: the page
        # image with the quoted lines highlighted.
        citations = [
            {
                **citation,
                "url": citation.get("url")
                or links_to.url(citation["document_id"], citation["page_number"]),
            }
            for citation in data.get("citations", [])
        ]
        titles = calls.document_titles(
            channel, [citation["document_id"] for citation in citations]
        )
        for citation in citations:
            citation["document_title"] = titles.get(citation["document_id"], "")
        links: dict[tuple[int, int], str] = {}
        for citation in citations:
            key = (citation["document_id"], citation["page_number"])
            links.setdefault(key, citation["url"])
        return {
            "answer_html": calls.link_citations(
                data.get("answer", ""), links_to, links
            ),
            "citations": citations,
        }
    if asked.tool == "list_documents":
        total = data.get("total_count", 0)
        offset = data.get("offset", 0)
        rows = data.get("results", [])
        columns = [f.name for f in asked.filters]
        return {
            "documents": [
                {**row, "values": [_cell(row.get(name)) for name in columns]}
                for row in rows
            ],
            "columns": columns,
            "total": total,
            "first": offset + 1 if rows else 0,
            "last": offset + len(rows),
            "previous_page": asked.page - 1 if asked.page > 1 else None,
            "next_page": asked.page + 1 if offset + len(rows) < total else None,
        }
    if asked.tool == "get_pages":
        pages = calls.pages_from(call.result)
        for page in pages:
            page.url = links_to.url(page.document_id, page.number)
        return {"pages": pages}
    return {}
