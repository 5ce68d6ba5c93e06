"""store.yaml's declarations: the store, its agents and their permissions, its tools, inventory and
commerce settings, as :func:`core.workspace.store_yaml.load_store_config` reads them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.workspace.params import Param

if TYPE_CHECKING:
    from core.workspace.mcp import McpDecl

SHEET_REFRESH_MINUTES = 10  # how often a Google Sheet inventory is read again by default
SPREADSHEET_URL = re.compile(r"^https://docs\.google\.com/spreadsheets/d/([A-Za-z0-9_-]{10,})(?:[/?#].*)?$")
SPREADSHEET_ID = re.compile(r"^[A-Za-z0-9_-]{10,}$")
ROLES = ("sku", "name", "category", "price", "stock", "brand", "description")
DEFAULT_SEARCH_TOOL = "inventory.query"  # the built-in search over a mapped inventory
COMMERCE_ROLES = ("category", "brand", "budget", "min_price", "max_price", "query", "features", "sku", "name")
CURRENCY_REGIONS = {"USD": "US", "THB": "TH", "INR": "IN", "GBP": "GB", "JPY": "JP", "AUD": "AU", "CAD": "CA",
                    "SGD": "SG", "MYR": "MY", "IDR": "ID", "PHP": "PH", "VND": "VN", "NZD": "NZ", "CHF": "CH"}


@dataclass
class ToolDecl:
    """A tool declared in store.yaml."""

    name: str
    description: str = ""
    params: list[Param] = field(default_factory=list)
    table: str = ""
    sheet: str = ""
    key: dict[str, str] = field(default_factory=dict)
    not_found: str = "not found"
    http: dict[str, Any] = field(default_factory=dict)
    python: str = ""
    timeout_s: float | None = None
    side_effects: bool | None = None  # whether the tool changes the world (default: a Python tool does)
    line: int = 0


@dataclass
class AgentDecl:
    """A specialist agent and its row of the permission matrix."""

    name: str
    goals: list[str]
    tools: list[str]
    description: str = ""

    def owns(self, goal_type: str) -> bool:
        """Whether a goal type matches one of this agent's patterns."""
        return any(_glob(p, goal_type) for p in self.goals)


@dataclass
class InventoryDecl:
    """Where the inventory is and how its columns map to roles: a file of the workspace or a CSV URL
    (``source``, with ``sheet`` naming an .xlsx worksheet), or a Google Sheet (``sheet`` without ``source``,
    read through the Sheets API and cached: core/tools/sheets.py)."""

    source: str
    columns: dict[str, str]
    attributes: list[str]
    sheet: str = ""  # the .xlsx worksheet of ``source``
    google_sheet: str = ""  # a Google Sheet's spreadsheet id (``source`` is then "")
    worksheet: str = ""  # the Google Sheet's tab ("": its first tab)
    refresh_minutes: float = SHEET_REFRESH_MINUTES  # how long a cached copy of the Google Sheet is used


@dataclass(frozen=True)
class CommerceDecl:
    """store.yaml ``commerce``: the item search tool and which SOP slots play its roles 
    (core/understanding/commerce.py)."""

    search_tool: str = DEFAULT_SEARCH_TOOL
    slots: dict[str, str] = field(default_factory=dict)  # search role (category, budget, brand, ...) -> slot name


@dataclass
class StoreConfig:
    """The parsed store.yaml."""

    name: str
    currency: str = ""
    inventory: InventoryDecl | None = None
    agents: dict[str, AgentDecl] = field(default_factory=dict)
    tools: dict[str, ToolDecl] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    region: str = ""  # ISO 3166 country code: how customers write local phone numbers
    commerce: CommerceDecl | None = None  # item behaviour; on (with defaults) when an inventory is mapped
    greeting: str = ""  # how the agent opens its answer to a hello (default: the language's own hello)
    languages: tuple[str, ...] = ()  # the languages customers may write in (default: every language known)
    aliases: dict[str, str] = field(default_factory=dict)  # words customers use -> the store's own ("เมาส์": Mouse)
    polite_particle: str = ""  # the particle closing the agent's Thai sentences (ครับ, ค่ะ); default ครับ
    handoff: str = ""  # the tool that reaches a person when a customer asks for one (a queue, a ticket desk)
    mcp: dict[str, McpDecl] = field(default_factory=dict)  # MCP servers whose tools the store uses (tools: x: {mcp:})

    @property
    def home_region(self) -> str:
        """The store's region, else the one its currency implies (USD -> US), else none."""
        return (self.region or CURRENCY_REGIONS.get(self.currency.upper(), "")).upper()

    def agent_for(self, goal_type: str, explicit: str = "") -> AgentDecl | None:
        """The agent owning a goal type: the SOP's ``agent`` field, else the matching pattern."""
        if explicit:
            return self.agents.get(explicit)
        for agent in self.agents.values():
            if agent.owns(goal_type):
                return agent
        return None


def _glob(pattern: str, name: str) -> bool:
    regex = "^" + re.escape(pattern).replace(r"\*", ".*") + "$"
    return re.match(regex, name) is not None
