"""The audit trail in sentences: "Ana (staff) uploaded *Manual rev 3* to
*Aviation*", "API key *ci-bot* (qk_ab12…) changed the settings of *Aviation*
over MCP", "Claude (OAuth client) signed in as ana, read access to *Aviation*".

A row keeps who and where as text (documents.access.audit) so it survives
deleting either; the sentence prefers the live rows (a user's name, a key's
name, a channel's current name) and falls back to that text.
"""

import re
from dataclasses import dataclass

from django.utils.html import format_html
from django.utils.safestring import SafeString

from documents.models import AuditEvent

Action = AuditEvent.Action

# How the actor came in, as the end of a sentence; the admin says nothing.
DOORS = {
    "mcp": " over MCP",
    "rest": " through the REST API",
    "playground": " in the playground",
    "signin": "",
    "admin": "",
    "worker": "",
}

# What each action did, with {object} and {channel} where they go. An actor
# phrase comes first ("Ana (staff) ").
VERBS: dict[str, str] = {
    Action.DOCUMENT_UPLOAD: "uploaded {object} to {channel}",
    Action.DOCUMENT_DELETE: "deleted {object} from {channel}",
    Action.DOCUMENT_REINGEST: "queued {object} in {channel} to be read again",
    Action.DOCUMENT_EDIT: "edited the title or metadata of {object} in {channel}",
    Action.DOCUMENT_REVISE: "gave {object} in {channel} a new file",
    Action.SOURCE_ADD: "added the source {object} to {channel}",
    Action.SOURCE_CHANGE: "changed the source {object} of {channel}",
    Action.SOURCE_DELETE: "deleted the source {object} of {channel}",
    Action.SOURCE_SYNC: "synced the source {object} into {channel}",
    Action.CHANNEL_CREATE: "created the channel {channel}",
    Action.CHANNEL_CHANGE: "changed the settings of {channel}",
    Action.CHANNEL_ACCESS: "changed who may use {channel}",
    Action.CHANNEL_DELETE: "deleted the channel {channel}",
    Action.KEY_CREATE: "created the API key {object} for {channel}",
    Action.KEY_CHANGE: "changed the API key {object} for {channel}",
    Action.KEY_REVOKE: "revoked the API key {object}",
    Action.GRANT_REVOKE: "revoked the sign-in of {object}",
    Action.AUTH_REFUSED: "was refused access to {channel}",
    Action.AUTH_THROTTLED: "was held back after repeated failed sign-ins",
    Action.CLIENT_REGISTER: "registered as a new client",
    Action.TOKEN_ISSUE: "received a sign-in token for {channel}",
    Action.TOKEN_REUSE: "replayed a used code or refresh token",
    Action.CONSENT_REFUSE: "was refused on the consent page for {channel}",
    Action.LOGIN_FAILED: "typed a wrong password",
}

_KEY = re.compile(r"^key (?P<prefix>\S+?)… \((?P<name>.*)\)$")
_USER_VIA_CLIENT = re.compile(r"^user (?P<user>.+?) via (?P<client>.+)$")
_USER = re.compile(r"^user (?P<user>.+)$")
_SOURCE = re.compile(r"^source (?P<source>.+?)(?: \(asked by (?P<user>.+)\))?$")
_CLIENT = re.compile(r"^client (?P<client>.+)$")
_SCOPES = re.compile(r"Scopes: (?P<scopes>[\w, ]+)")
_GRANT = re.compile(r"^(?P<client>.+) for (?P<user>.+?) on .+$")


@dataclass(frozen=True)
class Who:
    """The actor as a sentence starts: its phrase, and the person a client
    acts for (if any)."""

    phrase: SafeString
    person: str = ""
    client: str = ""


def _person(event: AuditEvent, username: str) -> str:
    user = event.user
    if user is not None and user.get_username() == username:
        name = user.get_full_name() or username
        role = "superuser" if user.is_superuser else "staff" if user.is_staff else ""
        return f"{name} ({role})" if role else name
    return username


def who(event: AuditEvent) -> Who:
    """The actor of `event`, from its live rows when they still exist."""
    label = event.actor
    if match := _KEY.match(label):
        key = event.api_key
        name, prefix = (key.name, key.prefix) if key else match["name", "prefix"]
        return Who(format_html("API key <em>{}</em> ({}…)", name, prefix))
    if match := _USER_VIA_CLIENT.match(label):
        return Who(
            format_html("{} (OAuth client)", match["client"]),
            person=match["user"],
            client=match["client"],
        )
    if match := _USER.match(label):
        return Who(format_html("{}", _person(event, match["user"])))
    if match := _SOURCE.match(label):
        asked = f", asked by {match['user']}" if match["user"] else ""
        return Who(format_html("The source <em>{}</em>{}", match["source"], asked))
    if match := _CLIENT.match(label):
        return Who(format_html("{} (OAuth client)", match["client"]))
    return Who(format_html("{}", label[:1].upper() + label[1:]))


def channel_phrase(event: AuditEvent) -> SafeString:
    """The channel by its current name (by the name it had, once deleted)."""
    if event.channel is not None:
        return format_html("<em>{}</em>", event.channel.name)
    return format_html("<em>{}</em>", event.channel_slug or "no channel")


def sentence(event: AuditEvent) -> SafeString:
    """What happened, as one sentence (without the time), its names in
    <em> and every value escaped."""
    actor = who(event)
    channel = channel_phrase(event)
    door = DOORS.get(event.via, "")
    if event.action == Action.GRANT_CREATE:
        scopes = _SCOPES.search(event.detail)
        access = " and ".join(
            (scopes["scopes"] if scopes else "read").replace(" ", "").split(",")
        )
        grant = _GRANT.match(event.object_repr)
        client = actor.client or (grant["client"] if grant else "")
        person = actor.person or (event.user.get_username() if event.user else "?")
        return format_html(
            "{} (OAuth client) signed in as {}, {} access to {}",
            client or "A client",
            person,
            access,
            channel,
        )
    template = VERBS.get(event.action, "did {object} in {channel}")
    done = format_html(
        template.replace("{object}", "{0}").replace("{channel}", "{1}"),
        format_html("<em>{}</em>", event.object_repr or "something"),
        channel,
    )
    if actor.person:
        done = format_html("{} for {}", done, actor.person)
    return format_html("{} {}{}", actor.phrase, done, door)
