"""The tool switches a channel offers: filled by the MCP registry as tools
register, read by the channel's admin form and `Channel.enabled_tools()`.

`documents` may not import `mcp_endpoint`, yet the channel form lists one
checkbox per registered tool; this catalogue is the meeting point, so a tool
brings its own switch and no list of tool names is kept by hand here.
"""

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolSwitch:
    """One checkbox of the channel form: `name` is its key in
    `Channel.tool_switches`; `default` holds for channels that never chose."""

    name: str
    label: str
    default: bool = True


class ToolSwitches:
    """Switches in registration order, each with the tools it serves (search and
    fetch share one)."""

    def __init__(self) -> None:
        self._switches: dict[str, ToolSwitch] = {}
        self._tools: dict[str, list[str]] = {}

    def offer(self, switch: ToolSwitch, *, tool: str) -> None:
        """Let `switch` turn `tool` on and off; a different switch under a name
        already offered is an error, not a silent replacement."""
        known = self._switches.get(switch.name)
        if known is not None and known != switch:
            raise ValueError(
                f"Tool switch {switch.name!r} is already offered as {known!r}."
            )
        self._switches[switch.name] = switch
        tools = self._tools.setdefault(switch.name, [])
        if tool not in tools:
            tools.append(tool)

    def withdraw(self, *, tool: str) -> None:
        """Forget `tool`, and its switch once no tool uses it."""
        for name, tools in list(self._tools.items()):
            if tool in tools:
                tools.remove(tool)
            if not tools:
                del self._tools[name]
                del self._switches[name]

    def __iter__(self) -> Iterator[ToolSwitch]:
        return iter(list(self._switches.values()))

    def get(self, name: str) -> ToolSwitch | None:
        return self._switches.get(name)

    def tools(self, switch: ToolSwitch) -> tuple[str, ...]:
        return tuple(self._tools.get(switch.name, ()))


switch_catalogue = ToolSwitches()
