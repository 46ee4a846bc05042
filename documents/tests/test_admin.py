import re
import signal
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.messages import get_messages
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.management.commands import db_worker

from documents.access import COMMAND_LINE, admit
from documents.models import ApiKey, Channel, Document, Feedback, Page
from documents.services.documents import create_document
from documents.services.ingestion import ingest_document
from documents.services.keys import create_api_key, revoke_api_key

HOSTILE = "<script>alert('x')</script>"
DEMO_PDF = (
    Path(__file__).resolve().parents[2]
    / "demo"
    / "documents"
    / "faa-amt-handbook-self-locking-nuts.pdf"
)
FIELDS = [
    {"name": "kind", "type": "string", "filterable": True},
    {"name": "published", "type": "date"},
    {"name": "topics", "type": "string_list"},
    {"name": "pages_hint", "type": "number"},
    {"name": "reviewed", "type": "boolean"},
]


def make_document(channel: Channel, number: int = 1, **overrides) -> Document:
    values = {
        "channel": channel,
        "title": f"Document {number}",
        "file": f"channels/{channel.pk}/originals/doc-{number}.pdf",
        "original_filename": f"doc-{number}.pdf",
        "content_type": "application/pdf",
        "status": Document.Status.READY,
        "page_count": 3,
        "chunk_count": 7,
    }
    return Document.objects.create(**(values | overrides))


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def channel_form_data(**overrides) -> dict:
    data = {
        "name": "Handbook",
        "slug": "handbook",
        "description": "",
        "retriever_mode": "hybrid",
        "retriever_candidates": "100",
        "retriever_top_k": "8",
        "retriever_rrf_k": "60",
        "generator_kind": "extractive",
        "generator_temperature": "0",
        "generator_timeout": "30",
        "mcp_instructions": "",
        "max_pages_per_call": "10",
        "tool_switches": ["list_documents", "get_pages"],
        "metadata_fields-TOTAL_FORMS": "0",
        "metadata_fields-INITIAL_FORMS": "0",
        "metadata_fields-MIN_NUM_FORMS": "0",
        "metadata_fields-MAX_NUM_FORMS": "1000",
    }
    return data | overrides


# Channels


def test_channel_is_created_with_its_metadata_fields_inline(admin_client):
    """The channel add form saves the channel and the field rows typed inline."""
    data = channel_form_data(
        **{
            "metadata_fields-TOTAL_FORMS": "2",
            "metadata_fields-0-position": "0",
            "metadata_fields-0-name": "kind",
            "metadata_fields-0-type": "string",
            "metadata_fields-0-filterable": "on",
            "metadata_fields-1-position": "1",
            "metadata_fields-1-name": "published",
            "metadata_fields-1-type": "date",
        }
    )
    response = admin_client.post(reverse("admin:documents_channel_add"), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    channel = Channel.objects.get(slug="handbook")
    fields = list(channel.metadata_fields.values_list("name", "type", "filterable"))
    assert fields == [("kind", "string", True), ("published", "date", False)]
    assert channel.tool_switches["list_documents"]
    assert not channel.tool_switches["rag_search"]


def test_a_new_channel_opens_on_its_page_with_the_next_steps(admin_client):
    """Saved, a new channel's page says what comes next with working links
    (upload, add a source, create a key, the playground), not "You may edit
    it again below"."""
    response = admin_client.post(
        reverse("admin:documents_channel_add"), channel_form_data(), follow=True
    )
    channel = Channel.objects.get(slug="handbook")
    assert response.redirect_chain[-1][0] == reverse(
        "admin:documents_channel_change", args=[channel.pk]
    )
    page = response.text
    assert "You may edit it again below" not in page
    assert "Created the channel “Handbook”." in page
    assert "What comes next" in page
    links = {
        "Upload documents": f"/admin/documents/document/upload/?channel={channel.pk}",
        "Add a source": f"/admin/documents/source/add/?channel={channel.pk}",
        "Create an API key": f"/admin/documents/apikey/add/?channels={channel.pk}",
        "Open the playground": "/playground/?channel=handbook",
    }
    for label, url in links.items():
        assert f'<a href="{url}">{label}</a>' in page, label
        assert admin_client.get(url, follow=True).status_code == 200, url
    upload = admin_client.get(links["Upload documents"])
    assert upload.context["channel"] == channel


def test_channel_form_follows_the_order_of_the_work(admin_client, make_channel):
    """Name and description, who may see it, the metadata fields, then tools
    and discovery, then the advanced search settings, folded, with help in
    words: no environment variable named anywhere."""
    channel = make_channel(fields=FIELDS)
    page = admin_client.get(
        reverse("admin:documents_channel_change", args=[channel.pk])
    ).text
    order = [
        'name="name"',
        'name="description"',
        "Who may see it",
        'id="metadata_fields-group"',
        "Tools and discovery",
        "Search and answers (advanced)",
    ]
    positions = [page.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert re.search(r"<details[^>]*>\s*<summary>.*Search and answers", page, re.S)
    for variable in ("MCP_MAX_RESULTS", "CHAT_MODEL_", "MCP_MAX_PAGES_PER_CALL"):
        assert variable not in page, variable
    assert "it may ask for up to 50" in page


def test_chat_model_fields_show_only_when_an_endpoint_is_declared(
    admin_client, make_channel, settings
):
    """No chat endpoint declared: no temperature, timeout or model to set."""
    channel = make_channel()
    url = reverse("admin:documents_channel_change", args=[channel.pk])
    settings.CHAT_MODEL_ENDPOINTS = {}
    form = admin_client.get(url).context["adminform"].form
    assert not {"generator_temperature", "generator_timeout"} & set(form.fields)
    settings.CHAT_MODEL_ENDPOINTS = {
        "local": {"base_url": "http://127.0.0.1:1/v1", "api_key_env": "", "models": []}
    }
    form = admin_client.get(url).context["adminform"].form
    assert {"generator_temperature", "generator_timeout"} <= set(form.fields)


@pytest.mark.parametrize(
    "row",
    [
        {"newest_sort_0": "published", "newest_sort_1": "sideways"},
        {"newest_sort_0": "not a name", "newest_sort_1": "desc"},
        {
            "newest_sort_0": "published",
            "newest_sort_2": "published",
            "newest_sort_3": "asc",
        },
    ],
)
def test_channel_form_rejects_malformed_newest_sort(admin_client, row):
    """Each newest_sort row is a field name and a direction (asc or desc), each
    field once; anything else is an error and nothing is saved."""
    data = channel_form_data(**row)
    response = admin_client.post(reverse("admin:documents_channel_add"), data)
    assert response.status_code == 200
    assert "newest_sort" in response.context["adminform"].form.errors
    assert not Channel.objects.exists()


def test_channel_options_must_name_its_own_fields(admin_client):
    """newest_sort and filterable_fields may only name the channel's fields, and
    filterable_fields only filterable ones."""
    data = channel_form_data(
        **{
            "newest_sort_0": "published",
            "newest_sort_1": "desc",
            "filterable_fields": ["kind", "topics"],
            "metadata_fields-TOTAL_FORMS": "2",
            "metadata_fields-0-name": "kind",
            "metadata_fields-0-type": "string",
            "metadata_fields-0-position": "0",
            "metadata_fields-1-name": "topics",
            "metadata_fields-1-type": "string_list",
            "metadata_fields-1-position": "1",
        }
    )
    response = admin_client.post(reverse("admin:documents_channel_add"), data)
    assert response.status_code == 200
    assert "&#x27;published&#x27;, which is not a field here" in response.text
    assert "&#x27;kind&#x27;: mark that field filterable" in response.text
    assert not Channel.objects.exists()

    data |= {
        "metadata_fields-0-filterable": "on",
        "metadata_fields-1-filterable": "on",
        "metadata_fields-TOTAL_FORMS": "3",
        "metadata_fields-2-name": "published",
        "metadata_fields-2-type": "date",
        "metadata_fields-2-position": "2",
    }
    response = admin_client.post(reverse("admin:documents_channel_add"), data)
    assert response.status_code == 302
    channel = Channel.objects.get()
    assert channel.metadata_fields.count() == 3
    assert channel.newest_sort == [{"field": "published", "direction": "desc"}]
    assert channel.filterable_fields == ["kind", "topics"]


def test_channel_form_offers_the_channels_own_fields(admin_client, make_channel):
    """newest_sort is chosen from the channel's fields (a select per row, the
    saved sort selected) and filterable_fields from its filterable fields (a
    checkbox each, the saved ones ticked): no JSON to type."""
    channel = make_channel(
        fields=FIELDS, newest_sort=[{"field": "published", "direction": "asc"}]
    )
    channel.filterable_fields = ["kind"]
    channel.save()
    page = admin_client.get(
        reverse("admin:documents_channel_change", args=[channel.pk])
    )
    assert page.status_code == 200
    html = page.text
    assert (
        'name="newest_sort"' not in html and '<textarea name="newest_sort' not in html
    )
    first = re.search(r'<select name="newest_sort_0".*?</select>', html, re.S).group()
    assert re.findall(r'<option value="([^"]*)"', first) == [
        "",
        *(f["name"] for f in FIELDS),
    ]
    assert '<option value="published" selected>' in first
    direction = re.search(r'<select name="newest_sort_1".*?</select>', html, re.S)
    assert '<option value="asc" selected>' in direction.group()
    boxes = re.findall(
        r'<input type="checkbox" name="filterable_fields" value="([^"]+)"( checked)?',
        html,
    )
    assert boxes == [("kind", " checked")]  # the only filterable field
    assert "channel_fields.js" in html  # keeps the choices in step with the rows


def test_channel_page_speaks_in_human_labels(admin_client, make_channel):
    """The channel form's labels are words a curator uses, the field rows show
    "Sent with chunks" and "Delete?", and tools are named as MCP clients see
    them."""
    channel = make_channel(fields=FIELDS)
    html = admin_client.get(
        reverse("admin:documents_channel_change", args=[channel.pk])
    ).text
    for label in (
        "Server instructions",
        "Candidates per leg",
        "Fusion constant (RRF k)",
        "Newest first by",
        "Filters offered to MCP clients",
        "Page cap of get_pages",
        "Sent with chunks",
        "Delete?",
        " retrieve_text_chunks (Retrieve text passages)</label>",
    ):
        assert label in html, label
    for generated in ("Mcp instructions", "Retriever rrf k", "retrieve chunks"):
        assert generated not in html, generated


def test_editing_a_channel_bumps_its_corpus_version(admin_client, make_channel):
    """Saving a channel in the admin invalidates caches keyed on its corpus."""
    channel = make_channel("handbook", name="Handbook")
    before = channel.corpus_version
    url = reverse("admin:documents_channel_change", args=[channel.pk])
    response = admin_client.post(url, channel_form_data(name="Renamed"))
    assert response.status_code == 302
    channel.refresh_from_db()
    assert channel.name == "Renamed"
    assert channel.corpus_version == before + 1


def test_channel_list_counts_documents_without_a_query_per_row(
    admin_client, make_channel, django_assert_max_num_queries
):
    """The channel list shows document counts from one annotated query."""
    for index in range(30):
        channel = make_channel(f"channel-{index}")
        make_document(channel, index)
    with django_assert_max_num_queries(12):
        response = admin_client.get(reverse("admin:documents_channel_changelist"))
    assert response.status_code == 200
    assert "/mcp/channel-7" in response.text
    listing = reverse("admin:documents_document_changelist")
    assert f"{listing}?channel__id__exact={channel.pk}" in response.text


# Documents


def test_document_changelist_stays_bounded_with_thousands_of_documents(
    admin_client, make_channel, django_assert_max_num_queries
):
    """Listing, filtering and searching 1,200 documents uses a fixed number of
    queries, whatever the page size."""
    handbook, other = make_channel("handbook"), make_channel("other")
    Document.objects.bulk_create(
        Document(
            channel=handbook if index % 2 else other,
            title=f"Report {index}",
            file=f"x/{index}.pdf",
            original_filename=f"report-{index}.pdf",
            content_type="application/pdf",
            status=Document.Status.READY if index % 3 else Document.Status.FAILED,
            status_reason="" if index % 3 else "No extractable text.",
            page_count=index % 40,
            chunk_count=index % 90,
        )
        for index in range(1200)
    )
    url = reverse("admin:documents_document_changelist")
    for query in (
        "",
        f"?channel__id__exact={handbook.pk}",
        "?status__exact=failed",
        "?q=report-11",
    ):
        with django_assert_max_num_queries(12):
            response = admin_client.get(url + query)
        assert response.status_code == 200
    full = admin_client.get(url)
    assert "1200 documents" in full.text
    assert "No extractable text." in full.text


def test_document_list_reads_at_a_glance(admin_client, make_channel):
    """Statuses are badges, sizes human, long reasons shortened (whole on hover
    and on the document's page); "Text found" shows only for documents whose
    pages were read."""
    channel = make_channel()
    reason = (
        "The PDF is truncated: the file ends early (an incomplete upload or "
        "download?). Upload the file again; if it fails again, export it anew."
    )
    failed = make_document(
        channel,
        1,
        status=Document.Status.FAILED,
        status_reason=reason,
        page_count=0,
        chunk_count=0,
        size=17,
    )
    ready = make_document(channel, 2, size=713_992)
    listing = admin_client.get(reverse("admin:documents_document_changelist")).text
    assert "<span class='quire-badge quire-badge-bad'>Failed</span>" in listing
    assert "<span class='quire-badge quire-badge-good'>Ready</span>" in listing
    assert "697.3 KB" in listing and "17 bytes" in listing
    assert f"title='{reason}'" in listing.replace("&#x27;", "'")
    assert reason not in listing.replace(f"title='{reason}'", "")
    failed_page = admin_client.get(
        reverse("admin:documents_document_change", args=[failed.pk])
    ).text
    assert reason in failed_page
    assert "Text found" not in failed_page
    ready_page = admin_client.get(
        reverse("admin:documents_document_change", args=[ready.pk])
    ).text
    assert "Text found" in ready_page
    assert "697.3 KB (713,992 bytes)" in ready_page


def test_api_key_list_shows_each_keys_state(admin_client, make_channel):
    """The key list has its State column, a badge per key: active, revoked,
    expired."""
    channel = make_channel()
    create_api_key(actor=COMMAND_LINE, name="live", channels=[channel])
    revoked = create_api_key(actor=COMMAND_LINE, name="gone", channels=[channel])
    revoke_api_key(actor=COMMAND_LINE, api_key=revoked.api_key)
    create_api_key(
        actor=COMMAND_LINE,
        name="old",
        channels=[channel],
        expires_at=timezone.now() - timedelta(days=1),
    )
    listing = admin_client.get(reverse("admin:documents_apikey_changelist")).text
    assert "column-state_badge" in listing
    for state, tone in (("active", "good"), ("revoked", "bad"), ("expired", "quiet")):
        assert f"<span class='quire-badge quire-badge-{tone}'>{state}</span>" in (
            listing
        )


def test_document_list_and_detail_escape_document_text(admin_client, make_channel):
    """Titles, reasons and metadata taken from documents are rendered as text."""
    channel = make_channel()
    document = make_document(
        channel,
        title=HOSTILE,
        status=Document.Status.FAILED,
        status_reason=HOSTILE,
        metadata={"kind": HOSTILE},
    )
    pages = [
        admin_client.get(reverse("admin:documents_document_changelist")),
        admin_client.get(
            reverse("admin:documents_document_change", args=[document.pk])
        ),
    ]
    for response in pages:
        assert response.status_code == 200
        assert HOSTILE not in response.text
        assert "&lt;script&gt;" in response.text


def test_document_detail_is_read_only_with_page_links(admin_client, make_channel):
    """The document page shows its state and links every page, with no save."""
    channel = make_channel()
    document = make_document(channel, page_count=2)
    Page.objects.create(document=document, number=1, text="one")
    Page.objects.create(document=document, number=2, text="", has_text=False)
    url = reverse("admin:documents_document_change", args=[document.pk])
    response = admin_client.get(url)
    assert response.status_code == 200
    assert 'name="_save"' not in response.text
    for number in (1, 2):
        page_url = reverse("admin:documents_document_page", args=[document.pk, number])
        assert page_url in response.text


def test_documents_are_told_apart_by_file_name_and_format(admin_client, make_channel):
    """Two documents of one title, a DOCX and a PPTX, show their file names and
    formats beside the title in the list and on their pages."""
    channel = make_channel()
    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    pptx = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    first = make_document(
        channel, 1, title="Paper", original_filename="paper.docx", content_type=docx
    )
    make_document(
        channel, 2, title="Paper", original_filename="paper.pptx", content_type=pptx
    )
    listing = admin_client.get(reverse("admin:documents_document_changelist")).text
    assert "paper.docx · Word (.docx)" in listing
    assert "paper.pptx · PowerPoint (.pptx)" in listing
    page = admin_client.get(
        reverse("admin:documents_document_change", args=[first.pk])
    ).text
    assert "<h1>Document: Paper</h1>" in page
    assert "Word (.docx)" in page


def test_metadata_shows_as_labelled_fields_by_type(admin_client, make_channel):
    """A date as a date, a list as chips, a boolean as yes/no: no raw JSON."""
    channel = make_channel(fields=FIELDS)
    document = make_document(
        channel,
        metadata={
            "kind": "manual",
            "published": "2024-05-01",
            "topics": ["brakes", "tyres"],
            "reviewed": True,
        },
    )
    page = admin_client.get(
        reverse("admin:documents_document_change", args=[document.pk])
    ).text
    assert "<dt>published</dt><dd><time datetime='2024-05-01'>May 1, 2024</time>" in (
        page.replace("&#x27;", "'")
    )
    assert "<span class='quire-chip'>brakes</span>" in page.replace("&#x27;", "'")
    assert "<dt>reviewed</dt><dd>yes</dd>" in page
    assert '"topics"' not in page and "[&quot;brakes" not in page


def test_pages_read_by_ocr_are_marked(admin_client, make_channel):
    """The document page marks each page read by OCR, and says how many; the
    page preview says its text came from OCR."""
    channel = make_channel()
    document = make_document(channel, page_count=2)
    Page.objects.create(document=document, number=1, text="typed")
    Page.objects.create(document=document, number=2, text="scanned", ocr=True)
    page = admin_client.get(
        reverse("admin:documents_document_change", args=[document.pk])
    ).text
    assert "2 (OCR)</a>" in page and "1 (OCR)" not in page
    assert "1 page was read by OCR" in page
    preview = admin_client.get(
        reverse("admin:documents_document_page", args=[document.pk, 2])
    ).text
    assert "text read by OCR" in preview
    typed = admin_client.get(
        reverse("admin:documents_document_page", args=[document.pk, 1])
    ).text
    assert "text read by OCR" not in typed


def test_the_list_refreshes_itself_while_documents_wait(admin_client, make_channel):
    """The list loads its refresher and marks each row's status for it."""
    channel = make_channel()
    make_document(channel, status=Document.Status.PENDING)
    listing = admin_client.get(reverse("admin:documents_document_changelist")).text
    assert "documents/admin/refresh_list.js" in listing
    assert "data-status=&#x27;pending&#x27;" in listing or (
        "data-status='pending'" in listing
    )


def test_page_preview_shows_text_beside_the_image(admin_client, make_channel):
    """The preview renders the page's text (escaped) and serves its image bytes."""
    channel = make_channel()
    document = make_document(channel, page_count=2)
    page = Page(document=document, number=1, text=f"Torque values {HOSTILE}")
    page.image.save("page-1.png", ContentFile(b"\x89PNG\r\n\x1a\nfake"), save=False)
    page.save()
    Page.objects.create(document=document, number=2, text="second")

    response = admin_client.get(
        reverse("admin:documents_document_page", args=[document.pk, 1])
    )
    assert response.status_code == 200
    assert "Torque values &lt;script&gt;" in response.text
    image_url = reverse("admin:documents_document_page_image", args=[document.pk, 1])
    assert image_url in response.text
    assert reverse("admin:documents_document_page", args=[document.pk, 2]) in (
        response.text
    )

    image = admin_client.get(image_url)
    assert image.status_code == 200
    assert image["Content-Type"] == "image/png"
    assert image.content == b"\x89PNG\r\n\x1a\nfake"

    missing = admin_client.get(
        reverse("admin:documents_document_page_image", args=[document.pk, 2])
    )
    assert missing.status_code == 404


def test_a_text_format_page_preview_reads_like_the_document(admin_client, make_channel):
    """A Word page without an image is shown as its structure, full width,
    under the page header (title, page, revision, original, back to the
    document); no placeholder for a missing image, no claim that only PDF
    pages are rendered."""
    channel = make_channel()
    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    document = make_document(
        channel, content_type=docx, original_filename="manual.docx", page_count=2
    )
    Page.objects.create(
        document=document,
        number=1,
        text=f"# Torque\n\nTighten {HOSTILE} the nut.\n\n- step one\n- step two",
    )
    url = reverse("admin:documents_document_page", args=[document.pk, 1])
    response = admin_client.get(url)
    assert response.status_code == 200
    page = response.text
    assert "<h1>Torque</h1>" in page
    assert "<ul><li>step one</li><li>step two</li></ul>" in page
    assert "Tighten &lt;script&gt;" in page and HOSTILE not in page
    assert 'class="pv-body pv-text-only"' in page and "data-zoom-sheet" not in page
    assert "only PDF" not in page and "No image" not in page
    change = reverse("admin:documents_document_change", args=[document.pk])
    assert re.search(rf'<a class="pv-button" href="{change}">&larr; Back</a>', page)
    original = reverse("admin:documents_document_original", args=[document.pk])
    assert f'href="{original}">Open the original</a>' in page
    assert "Revision 1" in page and "Page 1 of 2" in page
    next_page = reverse("admin:documents_document_page", args=[document.pk, 2])
    assert f'href="{next_page}" rel="next"' in page
    # Paging on, back still leads to the document; from elsewhere in the
    # admin, back there.
    paged = admin_client.get(url, HTTP_REFERER=f"http://testserver{next_page}")
    assert f'<a class="pv-button" href="{change}">' in paged.text
    listing = "http://testserver" + reverse("admin:documents_document_changelist")
    came = admin_client.get(url, HTTP_REFERER=listing)
    assert f'<a class="pv-button" href="{listing}">' in came.text


@pytest.mark.parametrize("who", ["anonymous", "not staff"])
def test_page_views_are_for_staff_only(client, make_channel, who):
    """Page previews and images send anyone but staff to the admin login."""
    channel = make_channel()
    document = make_document(channel)
    Page.objects.create(document=document, number=1, text="secret")
    if who == "not staff":
        client.force_login(User.objects.create_user("reader", password="x" * 12))
    for name in ("page", "page_image"):
        url = reverse(f"admin:documents_document_{name}", args=[document.pk, 1])
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))


# Upload form (the parts that run before any document is created)


def test_upload_starts_by_asking_for_the_channel(admin_client, make_channel):
    """Without a channel the upload page only offers the channel choice."""
    make_channel("handbook", name="Handbook")
    response = admin_client.get(reverse("admin:documents_document_upload"))
    assert response.status_code == 200
    assert "Handbook" in response.text
    assert 'type="file"' not in response.text


def test_upload_form_has_one_input_per_metadata_field(admin_client, make_channel):
    """Once a channel is chosen, the form asks for files and that channel's fields."""
    channel = make_channel(fields=FIELDS)
    url = reverse("admin:documents_document_upload") + f"?channel={channel.pk}"
    response = admin_client.get(url)
    assert response.status_code == 200
    assert re.search(r'<input[^>]*type="file"[^>]*multiple', response.text)
    for field in FIELDS:
        assert f'name="meta_{field["name"]}"' in response.text
    assert 'type="date"' in response.text


def test_upload_rejects_metadata_that_does_not_fit_the_fields(
    admin_client, make_channel
):
    """Invalid values are reported on their inputs and nothing is uploaded."""
    channel = make_channel(
        fields=[*FIELDS, {"name": "owner", "type": "string", "required": True}]
    )
    url = reverse("admin:documents_document_upload") + f"?channel={channel.pk}"
    upload = ContentFile(b"# Notes\n\nText.", name="notes.md")
    response = admin_client.post(
        url,
        {"files": [upload], "meta_pages_hint": "many", "meta_published": "2024-13-01"},
    )
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert "meta_pages_hint" in errors
    assert "meta_published" in errors
    assert "meta_owner" in errors
    assert not Document.objects.exists()


def test_upload_requires_at_least_one_file(admin_client, make_channel):
    """Submitting the upload form without files is an error on the file input."""
    channel = make_channel()
    url = reverse("admin:documents_document_upload") + f"?channel={channel.pk}"
    response = admin_client.post(url, {})
    assert response.status_code == 200
    assert "files" in response.context["form"].errors


def run_worker(monkeypatch) -> None:
    """Run the ingestion worker (`manage.py db_worker`) until the queue is empty,
    as `make run` does in the background."""
    # The worker recycles connections between tasks; inside a test's transaction
    # that would drop the data the test set up.
    monkeypatch.setattr(db_worker, "close_old_connections", lambda: None)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        call_command(
            "db_worker",
            batch=True,
            interval=0,
            startup_delay=False,
            reload=False,
            verbosity=0,
        )
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def upload(admin_client, channel, files, **metadata):
    url = reverse("admin:documents_document_upload") + f"?channel={channel.pk}"
    data = {"files": files} | {f"meta_{k}": v for k, v in metadata.items()}
    return admin_client.post(url, data)


def test_admin_upload_is_queued_then_ready_after_the_worker_runs(
    admin_client,
    make_channel,
    fake_embedder,
    django_capture_on_commit_callbacks,
    monkeypatch,
):
    """Files uploaded in the admin are stored pending with the typed metadata,
    queued (never ingested in the request), and ready once the worker has run."""
    channel = make_channel(fields=FIELDS)
    files = [
        SimpleUploadedFile(
            "guide.md",
            b"# Torque\n\nTighten the nut to the stated torque.\n\n"
            b"# Safety\n\nWear gloves.",
            content_type="text/markdown",
        ),
        SimpleUploadedFile(
            "nuts.pdf", DEMO_PDF.read_bytes(), content_type="application/pdf"
        ),
    ]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = upload(
            admin_client,
            channel,
            files,
            kind="manual",
            published="2024-05-31",
            topics="maintenance, fasteners",
            pages_hint="12",
            reviewed="true",
        )
    assert response.status_code == 302, response.context["form"].errors
    assert response["Location"].endswith(f"?channel__id__exact={channel.pk}")
    assert len(callbacks) == 2
    documents = list(Document.objects.order_by("original_filename"))
    assert [d.original_filename for d in documents] == ["guide.md", "nuts.pdf"]
    assert {d.status for d in documents} == {Document.Status.PENDING}
    assert documents[0].metadata == {
        "kind": "manual",
        "published": "2024-05-31",
        "topics": ["maintenance", "fasteners"],
        "pages_hint": 12,
        "reviewed": True,
    }

    run_worker(monkeypatch)

    for document in documents:
        document.refresh_from_db()
        assert document.status == Document.Status.READY, document.status_reason
        assert document.page_count >= 1
        assert document.chunk_count >= 1
    pdf = documents[1]
    assert pdf.pages.get(number=1).image
    listing = admin_client.get(
        reverse("admin:documents_document_changelist")
        + f"?channel__id__exact={channel.pk}&status__exact=ready"
    )
    assert "guide.md" in listing.text or "Torque" in listing.text
    preview = admin_client.get(
        reverse("admin:documents_document_page", args=[pdf.pk, 1])
    )
    assert "self-locking" in preview.text


def test_upload_reports_files_the_service_refuses(admin_client, make_channel):
    """A file of an unsupported type is refused with a readable reason; accepted
    files of the same upload are still queued."""
    channel = make_channel()
    files = [
        SimpleUploadedFile("tool.exe", b"MZ\x90\x00", "application/x-msdownload"),
        SimpleUploadedFile("notes.txt", b"Plain notes.", "text/plain"),
    ]
    response = upload(admin_client, channel, files)
    assert response.status_code == 302
    assert list(Document.objects.values_list("original_filename", flat=True)) == [
        "notes.txt"
    ]
    texts = messages_of(admin_client.get(response["Location"]))
    assert any("tool.exe" in text and "unsupported" in text for text in texts)

    only_bad = upload(
        admin_client,
        channel,
        [SimpleUploadedFile("tool.exe", b"MZ", "application/x-msdownload")],
    )
    assert only_bad.status_code == 200
    assert "tool.exe" in str(only_bad.context["form"].errors["files"])


def test_upload_of_a_file_already_in_the_channel_says_so_by_name(
    admin_client, make_channel
):
    """Uploading a file the channel already holds stores nothing new; the admin
    names the file and the document that holds it, and queues the others."""
    channel = make_channel()
    upload(admin_client, channel, [SimpleUploadedFile("a.txt", b"Once.", "text/plain")])
    existing = Document.objects.get()
    response = upload(
        admin_client,
        channel,
        [
            SimpleUploadedFile("again.txt", b"Once.", "text/plain"),
            SimpleUploadedFile("new.txt", b"Something else.", "text/plain"),
        ],
    )
    assert response.status_code == 302
    assert Document.objects.count() == 2
    texts = messages_of(admin_client.get(response["Location"]))
    assert any(
        "again.txt is already in this channel" in text
        and f"document {existing.pk}" in text
        for text in texts
    )
    assert any("Queued 1 document for ingestion" in text for text in texts)
    only_repeat = upload(
        admin_client, channel, [SimpleUploadedFile("x.txt", b"Once.", "text/plain")]
    )
    assert only_repeat.status_code == 302
    assert Document.objects.count() == 2


def test_reingest_action_queues_the_documents_again(
    admin_client, make_channel, django_capture_on_commit_callbacks
):
    """The re-ingest action queues one ingestion per selected document."""
    channel = make_channel()
    failed = make_document(channel, 1, status=Document.Status.FAILED)
    ready = make_document(channel, 2)
    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client.post(
            reverse("admin:documents_document_changelist"),
            {"action": "reingest_selected", "_selected_action": [failed.pk, ready.pk]},
        )
    assert response.status_code == 302
    assert messages_of(admin_client.get(response["Location"])) == [
        "Queued 2 documents for ingestion."
    ]
    assert len(callbacks) == 2
    failed.refresh_from_db()
    ready.refresh_from_db()
    assert failed.status == Document.Status.PENDING
    assert ready.status == Document.Status.READY  # stays searchable meanwhile


def test_reingest_button_on_a_document_queues_it(
    admin_client, make_channel, django_capture_on_commit_callbacks
):
    """The document page's Re-ingest button (a POST) queues one ingestion; a GET
    does nothing."""
    document = make_document(make_channel(), status=Document.Status.FAILED)
    url = reverse("admin:documents_document_reingest", args=[document.pk])
    detail = admin_client.get(
        reverse("admin:documents_document_change", args=[document.pk])
    )
    assert url in detail.text
    with django_capture_on_commit_callbacks() as callbacks:
        assert admin_client.get(url).status_code == 405
    assert callbacks == []
    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client.post(url)
    assert response.status_code == 302
    assert len(callbacks) == 1
    document.refresh_from_db()
    assert document.status == Document.Status.PENDING


def test_original_file_is_served_to_staff(admin_client, make_channel):
    """The original link serves the stored file: PDFs inline, Markdown inline as
    plain text, anything else as a download."""
    channel = make_channel()
    markdown = make_document(channel, 1, content_type="text/markdown")
    markdown.file.save("notes.md", ContentFile(b"# Notes <b>x</b>"), save=True)
    other = make_document(channel, 2, content_type="application/x-unknown")
    other.file.save("blob.bin", ContentFile(b"\x00\x01"), save=True)

    response = admin_client.get(
        reverse("admin:documents_document_original", args=[markdown.pk])
    )
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"# Notes <b>x</b>"
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"].startswith("inline")

    response = admin_client.get(
        reverse("admin:documents_document_original", args=[other.pk])
    )
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment")


def test_delete_removes_the_document_through_the_service(
    admin_client,
    make_channel,
    fake_embedder,
    django_capture_on_commit_callbacks,
    monkeypatch,
):
    """Deleting documents from the admin removes them, their pages and files."""
    channel = make_channel()
    with django_capture_on_commit_callbacks(execute=True):
        upload(admin_client, channel, [SimpleUploadedFile("a.txt", b"Alpha text.")])
    run_worker(monkeypatch)
    document = Document.objects.get()
    stored = Path(document.file.path)
    assert stored.exists() and document.pages.exists()
    before = Channel.objects.get(pk=channel.pk).corpus_version
    confirm = admin_client.post(
        reverse("admin:documents_document_changelist"),
        {"action": "delete_selected", "_selected_action": [document.pk]},
    )
    assert confirm.status_code == 200
    assert "Chunks: 1" in confirm.text and "Pages: 1" in confirm.text
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:documents_document_changelist"),
            {
                "action": "delete_selected",
                "_selected_action": [document.pk],
                "post": "yes",
            },
        )
    assert response.status_code == 302
    assert not Document.objects.exists()
    assert not Page.objects.exists()
    assert not stored.exists()
    assert Channel.objects.get(pk=channel.pk).corpus_version > before


# API keys


def test_new_api_key_is_shown_once_and_works(admin_client, make_channel):
    """Adding a key shows the plain key in one message; the key opens its channels;
    no later page shows it again."""
    handbook, other = make_channel("handbook"), make_channel("other")
    response = admin_client.post(
        reverse("admin:documents_apikey_add"),
        {"name": "claude desktop", "channels": [handbook.pk], "expires_at": ""},
        follow=True,
    )
    assert response.status_code == 200
    found = re.findall(r"qk_[A-Za-z0-9_\-]{20,}", response.text)
    assert len(set(found)) == 1
    raw_key = found[0]
    api_key = ApiKey.objects.get()
    assert admit(handbook.slug, raw_key, via="test").api_key == api_key
    assert list(api_key.channels.all()) == [handbook]
    assert other not in api_key.channels.all()
    # Ready to use: a copy button, the channel's MCP URL, the configurations.
    assert 'data-copy="quire-new-key"' in response.text
    assert "http://testserver/mcp/handbook" in response.text
    assert "&quot;mcpServers&quot;" in response.text
    assert "@modelcontextprotocol/inspector" in response.text
    assert f"Authorization: Bearer {raw_key}" in response.text

    for url in (
        reverse("admin:documents_apikey_changelist"),
        reverse("admin:documents_apikey_change", args=[api_key.pk]),
    ):
        later = admin_client.get(url)
        assert raw_key not in later.text
        assert api_key.prefix in later.text


def test_api_key_expiry_must_be_in_the_future(admin_client, make_channel):
    """A new key cannot be created already expired."""
    channel = make_channel()
    past = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    response = admin_client.post(
        reverse("admin:documents_apikey_add"),
        {"name": "late", "channels": [channel.pk], "expires_at": past},
    )
    assert response.status_code == 200
    assert "expires_at" in response.context["adminform"].form.errors
    assert not ApiKey.objects.exists()


def test_revoke_action_revokes_selected_keys(admin_client, make_channel):
    """The revoke action revokes the chosen keys and leaves the others active."""
    channel = make_channel()
    first = create_api_key(actor=COMMAND_LINE, name="first", channels=[channel])
    second = create_api_key(actor=COMMAND_LINE, name="second", channels=[channel])
    response = admin_client.post(
        reverse("admin:documents_apikey_changelist"),
        {"action": "revoke_selected", "_selected_action": [first.api_key.pk]},
    )
    assert response.status_code == 302
    assert messages_of(admin_client.get(response["Location"])) == ["Revoked 1 API key."]
    first.api_key.refresh_from_db()
    second.api_key.refresh_from_db()
    assert first.api_key.revoked_at is not None
    assert second.api_key.revoked_at is None
    listing = admin_client.get(
        reverse("admin:documents_apikey_changelist") + "?state=revoked"
    )
    assert "first" in listing.text and "second" not in listing.text


def test_api_key_list_is_bounded(
    admin_client, make_channel, django_assert_max_num_queries
):
    """Keys list their channels from one prefetch, not one query per key."""
    channels = [make_channel(f"c{index}") for index in range(3)]
    for index in range(60):
        create_api_key(
            actor=COMMAND_LINE, name=f"key {index}", channels=channels[: index % 3 + 1]
        )
    with django_assert_max_num_queries(12):
        response = admin_client.get(reverse("admin:documents_apikey_changelist"))
    assert response.status_code == 200
    assert "c0, c1, c2" in response.text


# Feedback


def test_feedback_is_listed_read_only_and_escaped(admin_client, make_channel):
    """Feedback can be read and filtered by channel, never added or edited."""
    handbook, other = make_channel("handbook"), make_channel("other")
    feedback = Feedback.objects.create(
        channel=handbook, query="torque?", answer="42", score=1, comment=HOSTILE
    )
    Feedback.objects.create(channel=other, query="elsewhere", answer="-", score=-1)
    listing = admin_client.get(
        reverse("admin:documents_feedback_changelist")
        + f"?channel__id__exact={handbook.pk}"
    )
    assert listing.status_code == 200
    assert "torque?" in listing.text and "elsewhere" not in listing.text
    assert HOSTILE not in listing.text
    assert admin_client.get(reverse("admin:documents_feedback_add")).status_code == 403
    detail = admin_client.get(
        reverse("admin:documents_feedback_change", args=[feedback.pk])
    )
    assert detail.status_code == 200
    assert 'name="_save"' not in detail.text


def test_feedback_list_is_bounded(
    admin_client, make_channel, django_assert_max_num_queries
):
    """Feedback rows show their channel without a query per row."""
    channels = [make_channel(f"c{index}") for index in range(3)]
    key = create_api_key(actor=COMMAND_LINE, name="agent", channels=channels).api_key
    Feedback.objects.bulk_create(
        Feedback(
            channel=channels[index % 3],
            api_key=key,
            query=f"question {index}",
            answer="answer",
            score=index % 5,
        )
        for index in range(150)
    )
    with django_assert_max_num_queries(10):
        response = admin_client.get(reverse("admin:documents_feedback_changelist"))
    assert response.status_code == 200
    assert "150 feedback" in response.text


def test_delete_page_of_one_document_uses_the_service(
    admin_client, make_channel, django_capture_on_commit_callbacks
):
    """The document's own Delete page summarises what goes and deletes it."""
    channel = make_channel()
    document = make_document(channel)
    Page.objects.create(document=document, number=1, text="one")
    url = reverse("admin:documents_document_delete", args=[document.pk])
    confirm = admin_client.get(url)
    assert confirm.status_code == 200
    assert "Pages: 1" in confirm.text
    before = channel.corpus_version
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url, {"post": "yes"})
    assert response.status_code == 302
    assert not Document.objects.exists()
    assert Channel.objects.get(pk=channel.pk).corpus_version > before


def test_title_and_metadata_form_shows_the_current_values(admin_client, make_channel):
    """The document page links the form; each metadata input holds the stored
    value as it would be typed, and the title is escaped."""
    channel = make_channel(fields=FIELDS)
    document = make_document(
        channel,
        title=f"Manual {HOSTILE}",
        metadata={
            "kind": "manual",
            "published": "2024-05-01",
            "topics": ["torque", "nuts"],
            "pages_hint": 12,
            "reviewed": True,
        },
    )
    url = reverse("admin:documents_document_metadata", args=[document.pk])
    change = admin_client.get(
        reverse("admin:documents_document_change", args=[document.pk])
    )
    assert url in change.text

    response = admin_client.get(url)
    assert response.status_code == 200
    form = response.context["form"]
    assert form["title"].value() == f"Manual {HOSTILE}"
    assert form["meta_kind"].value() == "manual"
    assert form["meta_topics"].value() == "torque, nuts"
    assert form["meta_reviewed"].value() == "true"
    assert form["meta_pages_hint"].value() == "12"
    assert HOSTILE not in response.text
    assert 'value="2024-05-01"' in response.text


def test_saving_title_and_metadata_updates_the_document(admin_client, make_channel):
    channel = make_channel(fields=FIELDS)
    document = make_document(channel, metadata={"kind": "draft"})
    url = reverse("admin:documents_document_metadata", args=[document.pk])
    response = admin_client.post(
        url,
        {
            "title": "Torque guide",
            "meta_kind": "guide",
            "meta_published": "2025-01-31",
            "meta_topics": "torque, safety",
            "meta_pages_hint": "3",
            "meta_reviewed": "false",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "admin:documents_document_change", args=[document.pk]
    )
    document.refresh_from_db()
    assert document.title == "Torque guide"
    assert document.metadata == {
        "kind": "guide",
        "published": "2025-01-31",
        "topics": ["torque", "safety"],
        "pages_hint": 3,
        "reviewed": False,
    }
    assert any("Saved" in message for message in messages_of(response))


def test_bad_metadata_is_refused_with_the_reason_and_nothing_changes(
    admin_client, make_channel
):
    channel = make_channel(fields=FIELDS)
    document = make_document(channel, title="Kept", metadata={"kind": "draft"})
    url = reverse("admin:documents_document_metadata", args=[document.pk])
    response = admin_client.post(
        url, {"title": "Changed", "meta_kind": "guide", "meta_pages_hint": "many"}
    )
    assert response.status_code == 200
    assert "not a number" in response.text
    document.refresh_from_db()
    assert (document.title, document.metadata) == ("Kept", {"kind": "draft"})


def test_staff_who_may_only_view_documents_cannot_edit_metadata(client, make_channel):
    from django.contrib.auth.models import Permission

    channel = make_channel(fields=FIELDS)
    document = make_document(channel, metadata={"kind": "draft"})
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_document"))
    channel.curators.add(viewer)  # sees the channel, but may not change
    client.force_login(viewer)
    url = reverse("admin:documents_document_metadata", args=[document.pk])
    assert client.get(url).status_code == 403
    assert client.post(url, {"title": "x", "meta_kind": "other"}).status_code == 403
    document.refresh_from_db()
    assert document.metadata == {"kind": "draft"}


def test_replace_file_makes_a_revision_and_the_page_shows_the_history(
    admin_client, make_channel, fake_embedder, django_capture_on_commit_callbacks
):
    """The document page links to "Replace file"; its form stores the next
    revision and queues it; the history lists both revisions with who gave
    them and their SHA-256."""
    channel = make_channel()
    document = create_document(
        actor=COMMAND_LINE,
        channel=channel,
        file=SimpleUploadedFile("guide.md", b"# Guide\n\nOne.", "text/markdown"),
        enqueue=False,
    )
    ingest_document(document_id=document.pk)
    change = reverse("admin:documents_document_change", args=[document.pk])
    url = reverse("admin:documents_document_replace", args=[document.pk])
    assert url in admin_client.get(change).text
    assert admin_client.get(url).status_code == 200
    upload = SimpleUploadedFile("guide-2.md", b"# Guide\n\nTwo.", "text/markdown")
    with django_capture_on_commit_callbacks() as callbacks:
        response = admin_client.post(url, {"file": upload})
    assert response.status_code == 302 and len(callbacks) == 1
    assert "Queued revision 2" in messages_of(response)[0]
    revision = document.revisions.get(number=2)
    assert revision.actor == "user admin"
    page = admin_client.get(change).text
    assert "guide-2.md" in page and "waiting to be read" in page
    assert revision.sha256[:12] in page and "1 (current)" in page
    again = SimpleUploadedFile("copy.md", b"# Guide\n\nOne.", "text/markdown")
    response = admin_client.post(url, {"file": again})
    assert "nothing changed" in messages_of(response)[0]


def test_staff_who_may_only_view_documents_cannot_replace_files(client, make_channel):
    """Replacing a file needs the change permission, as re-ingesting does."""
    channel = make_channel()
    document = make_document(channel)
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_document"))
    channel.curators.add(viewer)
    client.force_login(viewer)
    url = reverse("admin:documents_document_replace", args=[document.pk])
    assert client.get(url).status_code == 403
    upload = SimpleUploadedFile("x.md", b"# X", "text/markdown")
    assert client.post(url, {"file": upload}).status_code == 403
    assert not document.revisions.exists()
