"""Node 22 (installed by `make node` into .node22) for the npm-based MCP tools."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NODE_BIN = REPO / ".node22" / "node_modules" / ".bin"
# npm keeps its downloads here (git-ignored), so reruns don't fetch again.
NPM_CACHE = REPO / ".node22" / "npm-cache"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


def node_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{NODE_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["npm_config_cache"] = str(NPM_CACHE)
    env["npm_config_prefer_offline"] = "true"
    env["npm_config_update_notifier"] = "false"
    return env


def require_node() -> None:
    if not (NODE_BIN / "node").exists():
        pytest.fail("Node 22 is missing: run `make node` (make test does).")
