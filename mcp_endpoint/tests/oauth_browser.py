"""A scripted browser for the OAuth snippet of docs/mcp-clients.md: Python's
webbrowser runs it (BROWSER) with the authorization URL; it signs in as
QUIRE_SIGNIN_USER, allows on the consent page and follows the redirect to the
snippet's callback, as a person would."""

import html
import os
import re
import sys
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar

HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


def hidden_fields(page: str) -> dict[str, str]:
    return {name: html.unescape(value) for name, value in HIDDEN.findall(page)}


def main(url: str) -> None:
    browser = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(CookieJar())
    )
    login = browser.open(url)  # to the sign-in page
    form = hidden_fields(login.read().decode())
    form.update(
        username=os.environ["QUIRE_SIGNIN_USER"],
        password=os.environ["QUIRE_SIGNIN_PASSWORD"],
    )
    consent = browser.open(login.url, urllib.parse.urlencode(form).encode())
    page = consent.read().decode()
    assert 'id="authorizationForm"' in page, page[:2000]
    answer = {**hidden_fields(page), "allow": "Allow"}
    authorize = urllib.parse.urljoin(
        consent.url, urllib.parse.urlsplit(consent.url).path
    )
    done = browser.open(authorize, urllib.parse.urlencode(answer).encode())
    assert done.status == 200, done.status  # the snippet's callback answered


if __name__ == "__main__":
    main(sys.argv[1])
