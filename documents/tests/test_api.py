"""The REST API under /api/: keys, channels, documents, search, answers, feedback,
and the one error shape (RFC 9457 problem details)."""

import io
import json

import pytest
from django.core.files.base import ContentFile
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from PIL import Image

from documents.access import COMMAND_LINE
from documents.models import Document, Feedback, Page
from documents.services.keys import create_api_key, revoke_api_key
from documents.tests.corpus import add_document, mark_synced

PROBLEM = "application/problem+json"


def png_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "blue").save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def handbook(make_channel, fake_embedder):
    channel = make_channel(
        "handbook",
        fields=[
            {"name": "topic", "type": "string", "filterable": True},
            {"name": "year", "type": "number", "filterable": True},
        ],
        newest_sort=[{"field": "year", "direction": "desc"}],
    )
    holidays = add_document(
        channel,
        title="Holiday policy",
        pages=[
            "Employees receive twenty five days of paid holiday each year.",
            "Unused holiday days may be carried over until March.",
        ],
        metadata={"topic": "holidays", "year": 2024},
    )
    Page.objects.get(document=holidays, number=1).image.save(
        "page-1.png", ContentFile(png_bytes()), save=True
    )
    add_document(
        channel,
        title="Expense rules",
        pages=["Travel expenses are reimbursed within thirty days of the claim."],
        metadata={"topic": "expenses", "year": 2023},
    )
    return channel


@pytest.fixture
def other(make_channel, fake_embedder):
    channel = make_channel("other")
    add_document(channel, title="Elsewhere", pages=["Not for handbook keys."])
    return channel


@pytest.fixture
def key(handbook):
    """A key that may write too, as an upload script's would."""
    return create_api_key(
        actor=COMMAND_LINE, name="script", channels=[handbook], scopes=["write"]
    ).raw_key


@pytest.fixture
def api(key):
    return Client(headers={"Authorization": f"Bearer {key}"})


def doc_id(title: str) -> int:
    return Document.objects.get(title=title).pk


def assert_problem(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith(PROBLEM)
    body = response.json()
    assert body["status"] == status
    assert body["type"] == "about:blank"
    assert body["title"] and body["detail"]
    return body


def test_missing_key_is_a_401_problem(handbook):
    """Without a key every route answers 401 problem details and asks for Bearer."""
    response = Client().get("/api/channels/handbook")
    body = assert_problem(response, 401)
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "API key" in body["detail"]


def test_unknown_and_revoked_keys_are_refused(handbook, key):
    """An unknown key and a revoked key get 401, on lists and single channels."""
    unknown = Client(headers={"Authorization": "Bearer qk_nope"})
    assert_problem(unknown.get("/api/channels"), 401)
    assert_problem(unknown.get("/api/channels/handbook"), 401)
    # Channel names can't be probed without a valid key.
    assert_problem(unknown.get("/api/channels/missing"), 401)
    api_key = handbook.api_keys.get()
    revoke_api_key(actor=COMMAND_LINE, api_key=api_key)
    revoked = Client(headers={"Authorization": f"Bearer {key}"})
    assert "revoked" in assert_problem(revoked.get("/api/channels"), 401)["detail"]


def test_a_key_sees_only_the_channels_it_opens(api, handbook, other):
    """The channel list holds the key's channels; another channel is 403."""
    response = api.get("/api/channels")
    assert response.status_code == 200
    assert [channel["slug"] for channel in response.json()] == ["handbook"]
    assert_problem(api.get("/api/channels/other"), 403)
    assert_problem(api.get("/api/channels/other/documents"), 403)
    assert_problem(api.get("/api/channels/missing"), 404)


def test_api_key_header_works_like_bearer(handbook, key):
    """`api-key: <key>` authenticates as well as `Authorization: Bearer`."""
    response = Client(headers={"api-key": key}).get("/api/channels/handbook")
    assert response.status_code == 200
    body = response.json()
    assert body["mcp_path"] == "/mcp/handbook"
    assert [field["name"] for field in body["fields"]] == ["topic", "year"]
    topic = body["metadata_filter_schema"]["anyOf"][0]["properties"]["topic"]
    assert topic["anyOf"][0]["enum"] == ["expenses", "holidays"]


def test_document_list_filters_and_pages_like_list_documents(
    api, handbook, django_assert_max_num_queries
):
    """The list takes the same metadata_filter and paging as the MCP tool and is
    sorted by the channel's newest sort, in a fixed number of queries."""
    with django_assert_max_num_queries(12):
        response = api.get("/api/channels/handbook/documents", {"limit": 1})
    body = response.json()
    assert body["total_count"] == 2 and body["limit"] == 1
    assert [row["title"] for row in body["results"]] == ["Holiday policy"]
    second = api.get(
        "/api/channels/handbook/documents", {"limit": 1, "offset": 1}
    ).json()
    assert [row["title"] for row in second["results"]] == ["Expense rules"]
    filtered = api.get(
        "/api/channels/handbook/documents",
        {"metadata_filter": json.dumps({"year": {"max": 2023}})},
    ).json()
    assert [row["title"] for row in filtered["results"]] == ["Expense rules"]
    assert filtered["results"][0]["topic"] == "expenses"


def test_bad_filters_are_400_problems_written_for_people(api, handbook):
    """A value not in use, or a filter that is not JSON, is a 400 problem that
    says what is allowed."""
    response = api.get(
        "/api/channels/handbook/documents",
        {"metadata_filter": json.dumps({"topic": "holiday"})},
    )
    body = assert_problem(response, 400)
    assert "holidays" in body["detail"]
    assert_problem(
        api.get("/api/channels/handbook/documents", {"metadata_filter": "{oops"}), 400
    )
    search = api.post(
        "/api/channels/handbook/search",
        {"query": "holiday", "metadata_filter": {"colour": "red"}},
        content_type="application/json",
    )
    assert "topic" in assert_problem(search, 400)["detail"]


def test_invalid_input_is_422_with_errors(api, handbook):
    """Schema violations list each problem under `errors`."""
    response = api.post(
        "/api/channels/handbook/feedback",
        {"query": "", "answer": "a", "score": 9},
        content_type="application/json",
    )
    body = assert_problem(response, 422)
    fields = {tuple(error["loc"])[-1] for error in body["errors"]}
    assert {"query", "score"} <= fields


def test_upload_queues_a_pending_document(
    api, handbook, django_capture_on_commit_callbacks
):
    """A multipart upload with metadata is stored as pending and queued."""
    upload = ContentFile(b"# Remote work\n\nWork from home two days a week.")
    upload.name = "remote.md"
    with django_capture_on_commit_callbacks() as callbacks:
        response = api.post(
            "/api/channels/handbook/documents",
            {
                "file": upload,
                "metadata": json.dumps({"topic": "remote", "year": 2025}),
                "title": "Remote work",
            },
        )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "pending"
    assert body["title"] == "Remote work"
    assert body["metadata"] == {"topic": "remote", "year": 2025}
    assert len(callbacks) == 1
    assert Document.objects.get(pk=body["id"]).channel == handbook


def test_upload_of_a_file_already_in_the_channel_answers_with_it(
    api, handbook, django_capture_on_commit_callbacks
):
    """The same file uploaded again is not stored again: 200 (not 202) with the
    document that already holds it, and nothing is queued."""
    first = ContentFile(b"# Parking\n\nPark in the yard.")
    first.name = "parking.md"
    created = api.post("/api/channels/handbook/documents", {"file": first})
    assert created.status_code == 202, created.content
    again = ContentFile(b"# Parking\n\nPark in the yard.")
    again.name = "parking (1).md"
    before = Document.objects.count()
    with django_capture_on_commit_callbacks() as callbacks:
        repeat = api.post("/api/channels/handbook/documents", {"file": again})
    assert repeat.status_code == 200, repeat.content
    assert repeat.json()["id"] == created.json()["id"]
    assert repeat.json()["filename"] == "parking.md"
    assert Document.objects.count() == before and not callbacks


def test_upload_rejects_bad_type_size_and_metadata(api, handbook, settings):
    """Wrong types, files over UPLOAD_MAX_BYTES, bad metadata and a title longer
    than a document's title holds are 422 problems naming the problem, and
    nothing is stored."""
    before = Document.objects.count()
    program = ContentFile(b"MZ\x90\x00")
    program.name = "tool.exe"
    body = assert_problem(
        api.post("/api/channels/handbook/documents", {"file": program}), 422
    )
    assert "unsupported file type" in body["detail"]
    settings.UPLOAD_MAX_BYTES = 10
    big = ContentFile(b"x" * 100)
    big.name = "big.txt"
    body = assert_problem(
        api.post("/api/channels/handbook/documents", {"file": big}), 422
    )
    assert "upload limit" in body["detail"]
    settings.UPLOAD_MAX_BYTES = 1000
    text = ContentFile(b"hello")
    text.name = "a.txt"
    body = assert_problem(
        api.post(
            "/api/channels/handbook/documents",
            {"file": text, "metadata": json.dumps({"year": "soon"})},
        ),
        422,
    )
    assert body["errors"]
    assert_problem(
        api.post("/api/channels/handbook/documents", {"file": text, "metadata": "[1]"}),
        422,
    )
    longest = Document._meta.get_field("title").max_length
    assert_problem(
        api.post(
            "/api/channels/handbook/documents",
            {"file": text, "title": "t" * (longest + 1)},
        ),
        422,
    )
    assert Document.objects.count() == before


def test_read_reingest_and_delete_a_document(
    api, handbook, django_capture_on_commit_callbacks
):
    """A document reads back with its state; re-ingest queues it; delete removes
    it and later reads are 404."""
    pk = doc_id("Holiday policy")
    body = api.get(f"/api/channels/handbook/documents/{pk}").json()
    assert body["status"] == "ready" and body["page_count"] == 2
    with django_capture_on_commit_callbacks() as callbacks:
        response = api.post(f"/api/channels/handbook/documents/{pk}/reingest")
    assert response.status_code == 202
    assert len(callbacks) == 1
    response = api.delete(f"/api/channels/handbook/documents/{pk}")
    assert response.status_code == 204
    assert not Document.objects.filter(pk=pk).exists()
    assert_problem(api.get(f"/api/channels/handbook/documents/{pk}"), 404)


def test_documents_carry_their_source_and_public_url(api, handbook):
    """A synced web page's document and its listing row give the source's
    name and the page's public URL; an upload's give null for both."""
    url = "https://handbook.example/holidays"
    pk = mark_synced(Document.objects.get(title="Holiday policy"), key=url, url=url).pk
    body = api.get(f"/api/channels/handbook/documents/{pk}").json()
    assert (body["source"], body["source_url"]) == ("Handbook site", url)
    upload = api.get(f"/api/channels/handbook/documents/{doc_id('Expense rules')}")
    assert (upload.json()["source"], upload.json()["source_url"]) == (None, None)
    rows = {
        row["title"]: row
        for row in api.get("/api/channels/handbook/documents").json()["results"]
    }
    assert rows["Holiday policy"]["source_url"] == url
    assert rows["Expense rules"]["source_url"] is None


def test_the_openapi_schema_describes_source_and_source_url(api, handbook):
    """DocumentOut and the listing rows declare source and source_url as
    nullable and always sent."""
    schemas = api.get("/api/openapi.json").json()["components"]["schemas"]
    for name in ("DocumentOut", "DocumentRow"):
        schema = schemas[name]
        assert {"source", "source_url"} <= set(schema["required"]), name
        assert {"type": "null"} in schema["properties"]["source_url"]["anyOf"], name


def test_documents_of_other_channels_are_not_found(api, handbook, other):
    """A document id of another channel is 404 through this channel."""
    elsewhere = doc_id("Elsewhere")
    assert_problem(api.get(f"/api/channels/handbook/documents/{elsewhere}"), 404)
    assert_problem(api.delete(f"/api/channels/handbook/documents/{elsewhere}"), 404)
    assert Document.objects.filter(pk=elsewhere).exists()


def test_page_text_and_image(api, handbook):
    """A page gives its text and the link to its PNG; pages without an image or
    outside the document are 404."""
    pk = doc_id("Holiday policy")
    page = api.get(f"/api/channels/handbook/documents/{pk}/pages/1").json()
    assert "twenty five days" in page["text"]
    image = api.get(page["image_url"])
    assert image.status_code == 200
    assert image["Content-Type"] == "image/png"
    assert image.content == png_bytes()
    second = api.get(f"/api/channels/handbook/documents/{pk}/pages/2").json()
    assert second["image_url"] is None
    assert_problem(api.get(f"/api/channels/handbook/documents/{pk}/pages/2/image"), 404)
    assert_problem(api.get(f"/api/channels/handbook/documents/{pk}/pages/9"), 404)


def test_search_returns_scored_chunks(api, handbook, django_assert_max_num_queries):
    """Search returns the best chunks with title, page, score and metadata, and
    honours the filter."""
    with django_assert_max_num_queries(30):
        response = api.post(
            "/api/channels/handbook/search",
            {"query": "paid holiday days", "limit": 2},
            content_type="application/json",
        )
    chunks = response.json()["chunks"]
    assert chunks and len(chunks) <= 2
    assert chunks[0]["document_title"] == "Holiday policy"
    assert chunks[0]["score"] > 0
    filtered = api.post(
        "/api/channels/handbook/search",
        {"query": "paid holiday days", "metadata_filter": {"topic": "expenses"}},
        content_type="application/json",
    ).json()["chunks"]
    assert {chunk["document_title"] for chunk in filtered} == {"Expense rules"}


def test_answer_cites_pages(api, handbook):
    """The answer cites its sources inline and lists the citations."""
    body = api.post(
        "/api/channels/handbook/answer",
        {"query": "How many days of paid holiday do employees receive?"},
        content_type="application/json",
    ).json()
    holiday = doc_id("Holiday policy")
    assert f"[Document {holiday}, Page 1]" in body["answer"]
    assert body["citations"][0]["document_id"] == holiday


def test_feedback_is_stored_for_the_channel(api, handbook, key):
    """Feedback is stored against the channel and the key that sent it."""
    response = api.post(
        "/api/channels/handbook/feedback",
        {"query": "q", "answer": "a", "score": 4, "comment": "fine"},
        content_type="application/json",
    )
    assert response.status_code == 201
    feedback = Feedback.objects.get(pk=response.json()["feedback_id"])
    assert feedback.channel == handbook and feedback.score == 4
    assert feedback.api_key == handbook.api_keys.get()


def test_openapi_schema_and_local_docs(client):
    """The OpenAPI document is public; the docs page loads Swagger UI from this
    server (nothing from a CDN) and carries a Content-Security-Policy."""
    schema = client.get("/api/openapi.json").json()
    assert "/api/channels/{slug}/search" in schema["paths"]
    problem = schema["paths"]["/api/channels/{slug}"]["get"]["responses"]["404"]
    assert PROBLEM in problem["content"]
    docs = client.get("/api/docs")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    assert "default-src 'self'" in docs["Content-Security-Policy"]


def test_requests_are_rate_limited_per_key(api, handbook, settings, steady_rate_window):
    """Past MCP_RATE_LIMIT_PER_MINUTE requests (shared with MCP) a key gets a 429
    problem with Retry-After."""
    settings.MCP_RATE_LIMIT_PER_MINUTE = 1
    assert api.get("/api/channels/handbook").status_code == 200
    response = api.get("/api/channels/handbook")
    assert_problem(response, 429)
    assert 1 <= int(response["Retry-After"]) <= 60


def _put_file(api, path: str, name: str, data: bytes):
    upload = ContentFile(data)
    upload.name = name
    return api.put(
        path,
        data=encode_multipart(BOUNDARY, {"file": upload}),
        content_type=MULTIPART_CONTENT,
    )


def test_put_of_a_new_file_makes_the_next_revision(
    api, handbook, django_capture_on_commit_callbacks
):
    """PUT .../file stores the next revision of the same document and queues
    it (202); the document keeps its id, title and metadata and serves revision
    1 until the worker reads revision 2. The same content again is 200 and
    queues nothing."""
    pk = doc_id("Holiday policy")
    path = f"/api/channels/handbook/documents/{pk}/file"
    before = api.get(f"/api/channels/handbook/documents/{pk}").json()
    assert before["revision"] == 1 and before["revised_at"]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = _put_file(api, path, "holidays-2025.md", b"# Holidays\n\nThirty.")
    assert response.status_code == 202, response.content
    assert len(callbacks) == 1
    body = response.json()
    assert (body["id"], body["title"], body["revision"]) == (pk, "Holiday policy", 1)
    assert body["metadata"] == {"topic": "holidays", "year": 2024}
    with django_capture_on_commit_callbacks() as callbacks:
        again = _put_file(api, path, "again.md", b"# Holidays\n\nThirty.")
    assert again.status_code == 200, again.content
    assert not callbacks
    assert Document.objects.get(pk=pk).revisions.count() == 1  # revision 2 only


def test_put_of_a_new_file_is_checked_like_an_upload(api, handbook, key):
    """A refused type is a 422 problem; a read-only key is 403; another
    channel's document is 404."""
    pk = doc_id("Holiday policy")
    path = f"/api/channels/handbook/documents/{pk}/file"
    assert_problem(_put_file(api, path, "x.exe", b"MZ\x90\x00"), 422)
    reader = create_api_key(actor=COMMAND_LINE, name="reader", channels=[handbook])
    read_only = Client(headers={"Authorization": f"Bearer {reader.raw_key}"})
    assert_problem(_put_file(read_only, path, "a.md", b"# A"), 403)
    missing = "/api/channels/handbook/documents/999999/file"
    assert_problem(_put_file(api, missing, "a.md", b"# A"), 404)
