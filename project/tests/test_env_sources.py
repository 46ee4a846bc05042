"""The sources' settings readers: folders and S3 stores the operator declares
are read strictly, and a bad value stops start-up naming the variable."""

import json

import pytest
from django.core.exceptions import ImproperlyConfigured

from project.env import env_folders, env_s3_stores


def test_folders_are_absolute_paths_resolved_once(monkeypatch, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.setenv("SOURCE_FOLDERS", f"{tmp_path / 'link'}, /srv/docs")
    assert env_folders("SOURCE_FOLDERS") == [str(tmp_path / "real"), "/srv/docs"]
    monkeypatch.setenv("SOURCE_FOLDERS", "docs")
    with pytest.raises(ImproperlyConfigured, match="'docs' is not an absolute path"):
        env_folders("SOURCE_FOLDERS")


def test_s3_stores_name_endpoints_and_key_variables(monkeypatch):
    monkeypatch.setenv(
        "SOURCE_S3_STORES",
        json.dumps(
            {
                "archive": {
                    "endpoint_url": "https://s3.example.com",
                    "region": "eu-west-1",
                    "access_key_env": "ARCHIVE_KEY_ID",
                    "secret_key_env": "ARCHIVE_SECRET",
                    "buckets": ["manuals"],
                }
            }
        ),
    )
    assert env_s3_stores("SOURCE_S3_STORES") == {
        "archive": {
            "endpoint_url": "https://s3.example.com",
            "region": "eu-west-1",
            "access_key_env": "ARCHIVE_KEY_ID",
            "secret_key_env": "ARCHIVE_SECRET",
            "session_token_env": "",
            "addressing_style": "path",
            "buckets": ["manuals"],
            "timeout": 30.0,
        }
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{", "not valid JSON"),
        (
            '{"a": {"endpoint_url": "file:///x", "access_key_env": "K", '
            '"secret_key_env": "S"}}',
            r"endpoint_url must be an http\(s\) URL",
        ),
        ('{"a": {"access_key": "AKIA…"}}', "must be an object with"),
        ('{"a": {"access_key_env": "K"}}', "name the variables holding the keys"),
    ],
)
def test_a_bad_store_stops_start_up_naming_the_variable(monkeypatch, value, message):
    monkeypatch.setenv("SOURCE_S3_STORES", value)
    with pytest.raises(ImproperlyConfigured, match=message):
        env_s3_stores("SOURCE_S3_STORES")
