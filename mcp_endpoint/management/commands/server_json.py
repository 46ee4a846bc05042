"""manage.py server_json: the MCP Registry's server.json for this deployment."""

import json

from django.core.management.base import BaseCommand, CommandError

from mcp_endpoint.discovery import registry_server_json


class Command(BaseCommand):
    help = (
        "Print server.json (MCP Registry schema 2025-12-11) for the deployment at "
        "--base-url, with the channel as a URL template; publish it with the "
        "registry's mcp-publisher."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--base-url", required=True, help="e.g. https://quire.example.org"
        )
        parser.add_argument(
            "--name",
            default="",
            help="The registry name (default: the host reversed, /quire), e.g. "
            "org.example.quire/quire; the registry checks you own its namespace.",
        )

    def handle(self, *args, base_url, name, **options):
        base_url = base_url.rstrip("/")
        if not base_url.startswith(("https://", "http://")):
            raise CommandError("--base-url must start with https:// (or http://).")
        self.stdout.write(
            json.dumps(registry_server_json(base_url, name=name), indent=2)
        )
