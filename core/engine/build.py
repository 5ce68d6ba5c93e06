"""Assemble an orchestrator from a workspace folder."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.engine.flow import AgentEnv, SpecialistAgent
from core.engine.orchestrator import Orchestrator
from core.engine.settings import Settings, settings_from
from core.engine.slot_typing import gar_asks, gar_types, slot_types
from core.engine.workspace_checks import (
    condition_values,
    cross_checks,
    find_step,
    inferred_types,
    result_fields,
    tool_users,
    type_checks,
)
from core.language import text as T
from core.retrieval.embedding import CachedEmbedder, Progress, SharedModel
from core.shared.errors import SourceUnavailableError, UserInputError, WorkspaceError
from core.shared.problems import Problem
from core.shared.redaction import install_log_redaction, remember_secret
from core.sop import Sop, load_sops
from core.state.memory import PreferenceMemory, open_preference_memory
from core.state.sessions import StateStore, open_state_store
from core.tools.builtin_math import MathTool
from core.tools.catalog import Catalog, load_catalog
from core.tools.declared import build_declared
from core.tools.gateway import ToolGateway
from core.tools.held import HeldTool
from core.tools.inventory import InventoryTool, search_spec
from core.tools.kb import KB_TOOL, STEP, IndexMode, KnowledgeBase, KnowledgeBaseTool
from core.understanding import LOCAL_KEY, Brain, Commerce, LLMSettings, RuleBrain
from core.workspace.config import DEFAULT_SEARCH_TOOL, InventoryDecl
from core.workspace.files import WorkspaceFiles, load_workspace_files, raise_on_errors
from core.workspace.gar import GarIndex
from core.workspace.slots import SlotType, Vocabulary, listed_options
from core.workspace.trust import held_reason, is_trusted, untrusted_problem
from core.workspace.paths import state_folder

log = logging.getLogger(__name__)

BRAINS: tuple[str, ...] = ("rule", "llm", "hybrid")
"""The brains this build can run (``build_orchestrator(brain=...)``); "llm" and "hybrid" need an LLM endpoint."""


@dataclass
class Workspace:
    """A loaded workspace: files, compiled SOPs, tools and vocabulary."""

    files: WorkspaceFiles
    sops: list[Sop]
    tools: dict[str, Any]
    catalog: Catalog | None
    kb: KnowledgeBase | None
    vocab: Vocabulary
    embedder: CachedEmbedder
    problems: list[Problem]
    types: dict[str, dict[str, SlotType]] = field(default_factory=dict)  # per SOP, each slot's type
    trusted: bool = True  # False: its Python tools and MCP servers are not run (core/workspace/trust.py)


def embedder_for(root: Path) -> CachedEmbedder:
    """The shared model (loaded on the first text the cache does not hold) with this workspace's on-disk
    embedding cache."""
    return CachedEmbedder(SharedModel(), state_folder(Path(root)) / "embeddings.sqlite")


def load_workspace(root: str | Path, embedder: CachedEmbedder | None = None,
                   progress: Progress | None = None, kb_index: IndexMode = "now") -> Workspace:
    """Load and compile everything in a workspace, collecting problems instead of stopping at the first.

    ``progress`` (optional) is told the fraction done and the stage, for a progress bar. ``kb_index``
    says when the knowledge base is embedded (:class:`core.tools.kb.KnowledgeBase`): now, in the
    background (its progress in ``kb.status``), or on its first search. A workspace that is not trusted
    (:mod:`core.workspace.trust`) loads with its Python tools and MCP servers checked but not run.
    """
    report = progress or (lambda _f, _s: None)
    report(0.0, "reading store.yaml and gar.csv")
    files = load_workspace_files(root)
    problems = list(files.problems)
    trusted = is_trusted(files.root, files.config)
    if not trusted:
        problems.append(untrusted_problem(files.config))
    emb = embedder or embedder_for(files.root)
    gar = GarIndex(files.gar, emb)
    report(0.1, "compiling SOPs")
    sops, sop_problems = load_sops(files.sop_files(), gar)
    problems += sop_problems
    for text, (action, score) in gar.similarity_matches.items():
        file, line = find_step(sops, text)
        problems.append(Problem(file, line, "warning", f"step {text!r} matched GAR action {action!r} by "
                                                       f"similarity {score:.2f}"))
    tools: dict[str, Any] = {"math.evaluate": MathTool()}
    catalog = None
    report(0.2, "loading the inventory")
    if files.config.inventory is not None:
        search = files.config.commerce.search_tool if files.config.commerce else DEFAULT_SEARCH_TOOL
        own = search not in files.config.tools  # a declared tool of that name is the store's own search
        try:
            catalog, inv_problems = load_catalog(files.config.inventory, files.root)
            problems += inv_problems
            if own:
                tools[search] = InventoryTool(catalog, search)
        except SourceUnavailableError as exc:  # a sheet not read yet: only the search is off, until it can be
            problems.append(Problem(exc.location.file if exc.location else "inventory", 0, "warning",
                                    f"{exc.message}; {search} is off until the sheet can be read (tried again as "
                                    "customers ask for it), and everything else works"))
            if own:
                tools[search] = HeldTool(search_spec(search), f"the inventory is not available: {exc.message}",
                                         retry=_late_search(files.config.inventory, files.root, search))
        except WorkspaceError as exc:
            loc = exc.location
            problems.append(Problem(loc.file if loc else "inventory", loc.line if loc else 0, "error", exc.message))
    kb = None
    if files.kb_files():
        kb = KnowledgeBase(files.kb_files(), files.root, emb, float(files.config.settings.get("kb_min_score", 0.30)),
                           progress=lambda f, s: report(0.3 + 0.65 * f, s), index=kb_index)
        problems += kb.problems
        tools[KB_TOOL] = KnowledgeBaseTool(kb)
    else:
        users = tool_users(files, sops, KB_TOOL)
        if users:  # the built-in search exists with no articles yet: it finds nothing, and lint says so once
            tools[KB_TOOL] = KnowledgeBaseTool(KnowledgeBase([], files.root, emb))
            file, line, what = users[0]
            problems.append(Problem(file, line, "warning", f"{what} searches the knowledge base, but kb/ has no "
                                    "documents yet: it finds nothing until articles (.md or .txt) are added "
                                    "under kb/"))
    for decl in files.config.tools.values():
        try:
            tools[decl.name] = build_declared(decl, files.root, trusted=trusted,
                                              reason=held_reason(f"the Python tool {decl.name!r}"))
        except WorkspaceError as exc:
            problems.append(Problem("store.yaml", decl.line, "error", exc.message))
    if files.config.mcp:  # MCP servers: started (or reached) and listed now, each within its start deadline
        from core.tools.mcp_tools import build_mcp_tools, named_tools

        named = named_tools(files, (n.tool for sop in sops for n in sop.nodes.values()))
        served, mcp_problems = build_mcp_tools(files, named, trusted=trusted, reason=held_reason("its server"))
        problems += mcp_problems
        for name, tool in served.items():
            tools.setdefault(name, tool)
    problems += cross_checks(files, sops, tools)
    problems += result_fields(sops, tools)
    vocab = Vocabulary(catalog.categories if catalog else [], catalog.brands if catalog else [],
                       sorted(catalog.feature_words()) if catalog else [])
    declares_columns = any(p.type.lower().startswith("column") for row in files.gar for p in row.params) or any(
        spec.lower().startswith("column") for sop in sops for spec in sop.slots.values())
    columns = catalog.column_values(files.config.inventory.columns if files.config.inventory else None) \
        if catalog is not None and declares_columns else None  # distinct values only where a type needs them
    problems += type_checks(files, sops, columns)
    types = slot_types(sops, vocab, files.config.home_region, gar_asks(files), gar_types(files, columns), columns)
    gar_file = files.root / "gar.csv"
    gar_source = gar_file.read_text(encoding="utf-8", errors="replace") if files.gar and gar_file.is_file() else ""
    problems += inferred_types(sops, types, gar_source)
    problems += condition_values(sops, types)
    report(1.0, "ready")
    return Workspace(files, sops, tools, catalog, kb, vocab, emb, problems, types, trusted)


def _late_search(decl: InventoryDecl, root: Path, name: str) -> Callable[[], InventoryTool | None]:
    """What a held item search tries when called: the inventory read now, or None while it still cannot be."""

    def ready() -> InventoryTool | None:
        try:
            catalog, _ = load_catalog(decl, root)
        except WorkspaceError:
            return None
        return InventoryTool(catalog, name)

    return ready


def kb_triggers(sops: list[Sop], kb: KnowledgeBase | None) -> dict[str, list[str]]:
    """Trigger phrases from the store's own how-to articles for the SOP that asks the customer and then
    searches the knowledge base for a fix.

    Like ``Commerce.triggers``: when the knowledge base is replaced (stoves and tents instead of
    laptops), "my stove won't light" must still reach the SOP that looks up fixes. An article counts
    as a how-to when it lists steps; policy articles (returns, shipping) stay knowledge answers.
    """
    if kb is None:
        return {}
    fixing = [s.id for s in sops if any(n.tool == "knowledge_base.search" for n in s.nodes.values())
              and any(n.asks for n in s.nodes.values())]
    if len(fixing) != 1:
        return {}
    by_doc: dict[str, list[Any]] = {}
    for c in kb.chunks:
        by_doc.setdefault(c.ref, []).append(c)
    titles = [chunks[0].title for chunks in by_doc.values()
              if len(STEP.findall("\n".join(c.text for c in chunks))) >= 3]
    return {fixing[0]: titles} if titles else {}


def result_values(ws: Workspace) -> dict[str, dict[str, list[str]]]:
    """Per SOP, the values each field of its tools can take, where the GAR lists them ("the weather, one
    of Raining, Snowing, Sunny…"), so "which day is it dry?" can be read against a result's fields."""
    listed = {T.squash(p.name): opts for r in ws.files.gar if r.has("ask_user_input")
              for p in r.params if (opts := listed_options(r.metadata))}
    out: dict[str, dict[str, list[str]]] = {}
    for sop in ws.sops:
        fields = {p.name for n in sop.nodes.values() if n.tool in ws.tools for p in ws.tools[n.tool].spec.params}
        found = {f.rstrip("?"): listed[T.squash(f)] for f in fields if T.squash(f) in listed}
        if found:
            out[sop.id] = found
    return out


def build_orchestrator(workspace: str | Path, *, brain: str | None = None, state_url: str | None = None,
                       memory: PreferenceMemory | None = None, store: StateStore | None = None,
                       embedder: CachedEmbedder | None = None, loaded: Workspace | None = None,
                       llm: LLMSettings | None = None) -> Orchestrator:
    """Build an orchestrator for a workspace; settings come from the environment unless passed.

    ``brain`` is "rule", "llm" or "hybrid"; by default hybrid when an LLM is configured (``llm``, or
    ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` with ``SOP_LLM_MODEL``), else rule.

    Raises:
        WorkspaceError: when the workspace has errors (``python -m core lint`` lists them all).
        UserInputError: an unknown brain, or "llm"/"hybrid" without a usable LLM configuration.
    """
    install_log_redaction()  # every log line of the process: no API key, token or URL password in it
    ws = loaded or load_workspace(workspace, embedder)
    raise_on_errors(ws.problems)
    chosen, llm_settings = _choose_brain(brain or os.environ.get("SOP_BRAIN") or None, llm)
    if llm_settings is not None and llm_settings.api_key != LOCAL_KEY:
        remember_secret(llm_settings.api_key)  # a key typed in the chat settings: masked like the environment's
    cfg = ws.files.config
    settings = settings_from(cfg.settings)
    state_dir = ws.files.state_dir()
    url = state_url or os.environ.get("SOP_STATE_URL") or f"sqlite:///{state_dir / 'sessions.sqlite'}"
    st = store or open_state_store(url)
    # Zep Cloud when ZEP_API_KEY is set, else the state store's PostgreSQL database, else local SQLite
    mem = memory or open_preference_memory(state_dir, state_store=st)
    commerce = store_commerce(ws)
    rule = rule_brain(ws, commerce)
    types = ws.types
    sop_agent = {}
    for sop in ws.sops:
        decl = cfg.agent_for(sop.id, sop.agent)
        if decl is not None:
            sop_agent[sop.id] = decl.name
    the_brain = _llm_brain(chosen, llm_settings, rule, ws, types, list(sop_agent), settings) or rule
    env = AgentEnv(the_brain, types, cfg.currency, settings.max_steps_per_turn,
                   {name: {p.name for p in t.spec.params} for name, t in ws.tools.items()},
                   result_values=result_values(ws), commerce=commerce,
                   changing_tools=frozenset(n for n, t in ws.tools.items() if t.spec.side_effects))
    agents = {name: SpecialistAgent(decl, env) for name, decl in cfg.agents.items()}
    gateway = ToolGateway(ws.tools, cfg.agents, settings.tool_timeout_s)
    orch = Orchestrator(workspace_id=ws.files.id, sops=ws.sops, agents=agents, sop_agent=sop_agent, brain=the_brain,
                        gateway=gateway, store=st, memory=mem, vocab=ws.vocab, currency=cfg.currency,
                        settings=settings, store_name=cfg.name, commerce=commerce, greeting=cfg.greeting,
                        aliases=cfg.aliases, languages=cfg.languages, polite_particle=cfg.polite_particle,
                        handoff=cfg.handoff,
                        grounding_text=[f"{r.action} {r.metadata}" for r in ws.files.gar])
    settled = orch.settle_side_effects()  # tool runs of turns a killed process cut off, under their own turns
    if settled:
        log.warning("%s: %d tool run(s) of turns cut off midway settled; those that may have gone through are "
                    "listed for a person to check", ws.files.root, settled)
    return orch


def store_commerce(ws: Workspace) -> Commerce | None:
    """The item behaviour of a store that maps an inventory: its categories, brands, attribute values and item
    texts (None for a workspace with no ``commerce:``)."""
    cfg = ws.files.config
    if cfg.commerce is None:
        return None
    return Commerce(cfg.commerce, ws.vocab, cfg.currency,
                    ws.catalog.attribute_values() if ws.catalog is not None else None,
                    ws.catalog.item_texts() if ws.catalog is not None else None)


def rule_brain(ws: Workspace, commerce: Commerce | None = None) -> RuleBrain:
    """The rule brain that reads a workspace's messages: its SOPs' titles and triggers, with the phrases the
    store's own products and how-to articles add, and the store's words as its lexicon (the orchestrator's
    brain, or the rules under a model's)."""
    commerce = commerce or store_commerce(ws)
    lexicon = {w for term in ws.vocab.categories + ws.vocab.brands for w in T.words(term)}
    lexicon |= {w for term in ws.vocab.categories for w in T.plural_forms(term)}
    extra = commerce.triggers(ws.sops) if commerce is not None else {}
    for sop_id, phrases in kb_triggers(ws.sops, ws.kb).items():
        extra[sop_id] = [*extra.get(sop_id, []), *phrases]
    return RuleBrain(ws.embedder, ws.sops, lexicon, extra)


def _choose_brain(asked: str | None, llm: LLMSettings | None) -> tuple[str, LLMSettings | None]:
    """The brain to build and its checked LLM settings: hybrid by default when an LLM is configured.

    Raises:
        UserInputError: an unknown brain, "llm"/"hybrid" with no LLM configured, or settings that cannot work.
    """
    if asked is not None and asked not in BRAINS:
        raise UserInputError(f"brain {asked!r} is not available in this build; use one of: {', '.join(BRAINS)}")
    if asked == "rule":
        return "rule", None
    settings = llm.checked() if llm is not None else LLMSettings.from_env()
    chosen = asked or ("hybrid" if settings is not None else "rule")
    if chosen != "rule" and settings is None:
        raise UserInputError(f"the {chosen} brain needs a language model: set OPENAI_API_KEY (OpenAI) or "
                             "OPENAI_BASE_URL and SOP_LLM_MODEL (Ollama, vLLM, ...), or enter them in the chat "
                             "settings")
    return chosen, settings


def _llm_brain(chosen: str, llm: LLMSettings | None, rule: RuleBrain, ws: Workspace,
               types: dict[str, dict[str, SlotType]], startable: list[str], settings: Settings) -> Brain | None:
    """The LLM brain for "llm"/"hybrid" (None for "rule")."""
    if chosen == "rule" or llm is None:
        return None
    from core.understanding import LLMBrain, OpenAIChat

    return LLMBrain(rule, OpenAIChat(llm), sops=ws.sops, slot_types=types, startable=startable,
                    tools=set(ws.tools), mode="llm" if chosen == "llm" else "hybrid",
                    intent_threshold=settings.intent_threshold)
