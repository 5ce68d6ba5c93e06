"""Assemble an orchestrator from a workspace folder."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.engine.flow import AgentEnv, SpecialistAgent
from core.engine.orchestrator import Orchestrator, Settings
from core.language import text as T
from core.retrieval.embedding import CachedEmbedder, Progress, SharedModel
from core.shared.errors import UserInputError, WorkspaceError
from core.shared.problems import Problem
from core.shared.redaction import install_log_redaction, remember_secret
from core.sop import Sop, load_sops
from core.sop.load import called_by, calls_of
from core.state.memory import PreferenceMemory, open_preference_memory
from core.state.sessions import StateStore, open_state_store
from core.tools.builtin_math import MathTool
from core.tools.catalog import Catalog, load_catalog
from core.tools.declared import build_declared
from core.tools.gateway import ToolGateway
from core.tools.inventory import InventoryTool
from core.tools.kb import KB_TOOL, STEP, IndexMode, KnowledgeBase, KnowledgeBaseTool
from core.understanding.brains.base import Brain
from core.understanding.brains.llm_client import LOCAL_KEY, LLMSettings
from core.understanding.brains.rule import RuleBrain
from core.understanding.domain.commerce import Commerce
from core.workspace.config import DEFAULT_SEARCH_TOOL, Param, WorkspaceFiles, load_workspace_files, raise_on_errors
from core.workspace.gar import GarIndex
from core.workspace.slots import (
    IN_UNIT,
    SlotType,
    Vocabulary,
    declared_type,
    hints_per_slot,
    infer_type,
    listed_options,
    type_label,
    type_problem,
)

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


def embedder_for(root: Path) -> CachedEmbedder:
    """The shared model (loaded on the first text the cache does not hold) with this workspace's on-disk
    embedding cache."""
    return CachedEmbedder(SharedModel(), root / ".state" / "embeddings.sqlite")


def load_workspace(root: str | Path, embedder: CachedEmbedder | None = None,
                   progress: Progress | None = None, kb_index: IndexMode = "now") -> Workspace:
    """Load and compile everything in a workspace, collecting problems instead of stopping at the first.

    ``progress`` (optional) is told the fraction done and the stage, for a progress bar. ``kb_index``
    says when the knowledge base is embedded (:class:`core.tools.kb.KnowledgeBase`): now, in the
    background (its progress in ``kb.status``), or on its first search.
    """
    report = progress or (lambda _f, _s: None)
    report(0.0, "reading store.yaml and gar.csv")
    files = load_workspace_files(root)
    problems = list(files.problems)
    emb = embedder or embedder_for(files.root)
    gar = GarIndex(files.gar, emb)
    report(0.1, "compiling SOPs")
    sops, sop_problems = load_sops(files.sop_files(), gar)
    problems += sop_problems
    for text, (action, score) in gar.similarity_matches.items():
        file, line = _find_step(sops, text)
        problems.append(Problem(file, line, "warning", f"step {text!r} matched GAR action {action!r} by "
                                                       f"similarity {score:.2f}"))
    tools: dict[str, Any] = {"math.evaluate": MathTool()}
    catalog = None
    report(0.2, "loading the inventory")
    if files.config.inventory is not None:
        try:
            catalog, inv_problems = load_catalog(files.config.inventory, files.root)
            problems += inv_problems
            search = files.config.commerce.search_tool if files.config.commerce else DEFAULT_SEARCH_TOOL
            if search not in files.config.tools:  # a declared tool of that name is the store's own search
                tools[search] = InventoryTool(catalog, search)
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
        users = _tool_users(files, sops, KB_TOOL)
        if users:  # the built-in search exists with no articles yet: it finds nothing, and lint says so once
            tools[KB_TOOL] = KnowledgeBaseTool(KnowledgeBase([], files.root, emb))
            file, line, what = users[0]
            problems.append(Problem(file, line, "warning", f"{what} searches the knowledge base, but kb/ has no "
                                    "documents yet: it finds nothing until articles (.md or .txt) are added "
                                    "under kb/"))
    for decl in files.config.tools.values():
        try:
            tools[decl.name] = build_declared(decl, files.root)
        except WorkspaceError as exc:
            problems.append(Problem("store.yaml", decl.line, "error", exc.message))
    if files.config.mcp:  # MCP servers: started (or reached) and listed now, each within its start deadline
        from core.tools.mcp_tools import build_mcp_tools, named_tools

        named = named_tools(files, (n.tool for sop in sops for n in sop.nodes.values()))
        served, mcp_problems = build_mcp_tools(files, named)
        problems += mcp_problems
        for name, tool in served.items():
            tools.setdefault(name, tool)
    problems += _cross_checks(files, sops, tools)
    problems += _result_fields(sops, tools)
    vocab = Vocabulary(catalog.categories if catalog else [], catalog.brands if catalog else [],
                       sorted(catalog.feature_words()) if catalog else [])
    declares_columns = any(p.type.lower().startswith("column") for row in files.gar for p in row.params) or any(
        spec.lower().startswith("column") for sop in sops for spec in sop.slots.values())
    columns = catalog.column_values(files.config.inventory.columns if files.config.inventory else None) \
        if catalog is not None and declares_columns else None  # distinct values only where a type needs them
    problems += _type_checks(files, sops, columns)
    types = slot_types(sops, vocab, files.config.home_region, _gar_asks(files), _gar_types(files, columns), columns)
    problems += _inferred_types(sops, types)
    report(1.0, "ready")
    return Workspace(files, sops, tools, catalog, kb, vocab, emb, problems, types)


def _gar_types(files: WorkspaceFiles, columns: dict[str, list[str]] | None) -> dict[str, tuple[str, str]]:
    """Slot types gar.csv declares (``order_id:id``): name -> (type, where), the first usable one."""
    out: dict[str, tuple[str, str]] = {}
    for row in files.gar:
        for p in row.params:
            if p.type and not type_problem(p.type, columns):
                out.setdefault(p.name, (p.type, f"gar.csv:{row.line}"))
    return out


def _type_checks(files: WorkspaceFiles, sops: list[Sop], columns: dict[str, list[str]] | None) -> list[Problem]:
    """Declared slot types that cannot be used (an inventory column that does not exist, an unknown type in
    an SOP's ``slots:``), and one slot declared as two different types in gar.csv."""
    out: list[Problem] = []
    first: dict[str, tuple[str, int]] = {}
    for row in files.gar:
        for p in row.params:
            if not p.type:
                continue
            why = type_problem(p.type, columns or {})
            if why and p.type.lower().startswith("column"):  # other bad types are reported with gar.csv itself
                out.append(Problem("gar.csv", row.line, "error", f"action {row.action!r}: slot {p.name!r}: {why}"))
            seen = first.setdefault(p.name, (p.type, row.line))
            if seen[0].replace(" ", "") != p.type.replace(" ", ""):
                out.append(Problem("gar.csv", row.line, "warning", f"slot {p.name!r} is declared {p.type!r} here "
                                   f"and {seen[0]!r} on line {seen[1]}; the first declaration is used"))
    for sop in sops:
        for name, spec in sop.slots.items():
            why = type_problem(spec, columns or {})
            if why:
                out.append(Problem(sop.file, sop.slots_line, "error", f"slots: {name!r}: {why}"))
    return out


def _inferred_types(sops: list[Sop], types: dict[str, dict[str, SlotType]]) -> list[Problem]:
    """An info line for every slot whose type was inferred, not declared: what it was read as and why."""
    out: list[Problem] = []
    for sop in sops:
        own = set(sop.slot_names())  # the slots of SOPs it calls are reported where they are asked
        for name, st in types.get(sop.id, {}).items():
            if st.declared or name not in own:
                continue
            line = next((n.line for n in sop.nodes.values() if any(p.name == name for p in n.fills + n.params)), 0)
            out.append(Problem(sop.file, line, "info",
                               f"slot {name!r} is read as {type_label(st)} ({st.origin}); declare it to change "
                               f"that: {name}:<type> in gar.csv params or slots: {{{name}: <type>}} in the SOP"))
    return out


def _tool_users(files: WorkspaceFiles, sops: list[Sop], tool: str) -> list[tuple[str, int, str]]:
    """Where a tool is named: (file, line, what) for each GAR row, SOP step and agent that uses it."""
    out = [("gar.csv", row.line, f"action {row.action!r}") for row in files.gar if row.api == tool]
    out += [(sop.file, node.line, f"step {node.label!r}") for sop in sops for node in sop.nodes.values()
            if node.tool == tool]
    out += [("store.yaml", 0, f"agent {name!r}") for name, decl in files.config.agents.items() if tool in decl.tools]
    return out


def _find_step(sops: list[Sop], text: str) -> tuple[str, int]:
    """The SOP file and line where a step's text appears (for a warning about it)."""
    for sop in sops:
        for no, line in enumerate(sop.source.splitlines(), start=1):
            if line.strip().rstrip(":") == text.strip():
                return sop.file, no
    return "sops", 0


def _cross_checks(files: WorkspaceFiles, sops: list[Sop], tools: dict[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    called = {n.call for sop in sops for n in sop.nodes.values() if n.call}
    for row in files.gar:
        if row.api and row.api not in tools:
            out.append(Problem("gar.csv", row.line, "error", f"action {row.action!r}: unknown tool {row.api!r}"
                               f"{_mcp_hint(row.api, files, tools)}"))
    if files.config.handoff and files.config.handoff not in tools:
        out.append(Problem("store.yaml", 0, "error", f"handoff: unknown tool {files.config.handoff!r} (declare it "
                                                      "under tools:)"))
    for name, decl in files.config.agents.items():
        for tool in decl.tools:
            if tool not in tools:
                out.append(Problem("store.yaml", 0, "warning", f"agent {name!r} lists unknown tool {tool!r}"))
    for sop in sops:
        agent = files.config.agent_for(sop.id, sop.agent)
        if agent is None:
            out.append(Problem(sop.file, 1, "error", f"no agent owns {sop.id!r} (set 'agent' or add a goals "
                                                     "pattern in store.yaml)"))
            continue
        for node in sop.nodes.values():
            if node.tool and node.tool not in tools:
                out.append(Problem(sop.file, node.line, "error",
                                   f"step {node.label!r} uses unknown tool {node.tool!r}"
                                   f"{_mcp_hint(node.tool, files, tools)}"))
            elif node.tool and node.tool not in agent.tools:
                out.append(Problem(sop.file, node.line, "error", f"agent {agent.name!r} may not call {node.tool!r} "
                                                                 "(add it to its tools in store.yaml)"))
        if not sop.triggers and sop.id not in called:  # a procedure other SOPs call needs no triggers
            out.append(Problem(sop.file, 1, "warning", "no triggers: customers can only reach this SOP by its title"))
    return out




def _mcp_hint(name: str, files: WorkspaceFiles, tools: dict[str, Any]) -> str:
    """Which tools an MCP server lists, for an unknown tool named like one of its ('' without servers)."""
    if not files.config.mcp:
        return ""
    from core.tools.mcp_tools import unknown_tool_hint

    return unknown_tool_hint(name, files.config, tools)


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


def slot_types(sops: list[Sop], vocab: Vocabulary, region: str = "", asks: dict[str, str] | None = None,
               declared: dict[str, tuple[str, str]] | None = None,
               columns: dict[str, list[str]] | None = None) -> dict[str, dict[str, SlotType]]:
    """Each SOP's slot types: as declared (the SOP's ``slots:``, then the gar.csv param the step uses, then
    any gar.csv param of that name: ``declared``), else inferred from names and GAR/SOP text.

    The ask that fills a slot defines it (its metadata says what a valid answer is). A slot that only
    a tool of the SOP uses is defined by a GAR ask row that fills it, when the GAR has one (``asks``:
    slot name -> that row's metadata), else typed from its name. Each type says where it comes from
    (``origin``), for lint and the studio.
    """
    asks = asks or {}
    declared = declared or {}
    out: dict[str, dict[str, SlotType]] = {}
    for sop in sops:
        types: dict[str, SlotType] = {}

        def typed(param: Param, expects: str, gar_line: int, sop: Sop = sop) -> SlotType:
            if param.name in sop.slots and not type_problem(sop.slots[param.name], columns):
                spec, origin = sop.slots[param.name], f"declared in {sop.file}:{sop.slots_line}"
            elif param.type and not type_problem(param.type, columns):
                spec, origin = param.type, f"declared in gar.csv:{gar_line}"
            elif param.name in declared:
                spec, origin = declared[param.name][0], f"declared in {declared[param.name][1]}"
            else:
                st = infer_type(param.name, expects, vocab)
                st.origin = f"inferred from {expects!r}" if expects.strip() else "inferred from its name"
                return st
            st = declared_type(param.name, spec, expects, vocab, columns)
            st.origin = origin
            return st

        for node in sop.nodes.values():
            hint = node.expects or node.text  # several values asked at once: each its own part of the hint
            own = hints_per_slot(hint, len(node.fills)) if len(node.fills) > 1 else None
            for i, p in enumerate(node.fills):
                if p.name not in types:
                    types[p.name] = typed(p, own[i] if own else hint, node.gar.line if node.gar else 0)
        for node in sop.nodes.values():
            for p in node.params:
                if p.name not in types:
                    types[p.name] = typed(p, asks.get(p.name, ""), node.gar.line if node.gar else 0)
        _asked_units(sop, types)
        for st in types.values():
            st.region = region if st.kind in ("phone", "date") else ""
        out[sop.id] = types
    _with_callees(sops, out)
    return out


def _with_callees(sops: list[Sop], out: dict[str, dict[str, SlotType]]) -> None:
    """A caller also reads what the SOPs it calls ask for: values given up front are kept for them."""
    calls = calls_of(sops)
    for sop in sops:
        for callee in _called(sop.id, calls):
            for name, st in out.get(callee, {}).items():
                out[sop.id].setdefault(name, st)


def _asked_units(sop: Sop, types: dict[str, SlotType]) -> None:
    """A number asked in a unit ("What does your meter show, in kWh?") counts that unit: "14388 kwh" said
    unasked is its value."""
    for node in sop.nodes.values():
        for p in node.fills:
            st = types.get(p.name)
            unit = IN_UNIT.search(f"{node.expects} {node.message}") if st is not None and st.kind == "number" \
                and not st.unit else None
            if st is not None and unit:
                st.unit = unit.group(1).lower()


def _called(sop_id: str, calls: dict[str, list[str]]) -> list[str]:
    """The SOPs ``sop_id`` calls, directly or through the SOPs it calls, in order (never itself)."""
    return [sid for sid in called_by(sop_id, calls) if sid != sop_id and sid in calls]


def _result_fields(sops: list[Sop], tools: dict[str, Any]) -> list[Problem]:
    """A JSON node that reads a key nothing sets, after a tool step, reads a field of that tool's result when
    the tool says it returns one (a table tool's columns: ``context.minutesLate`` after ``getOrderStatus``
    over an orders table); otherwise it is the problem the SOP's compiler found."""
    out: list[Problem] = []
    by_id, calls = {s.id: s for s in sops}, calls_of(sops)
    for sop in sops:
        reach = [sop, *(by_id[c] for c in _called(sop.id, calls))]  # a called SOP's values come back to its caller
        fields = {str(c) for s in reach for n in s.nodes.values() if n.tool
                  for c in getattr(getattr(tools.get(n.tool), "frame", None), "columns", [])}
        fields |= {name for s in reach[1:] for name in s.slot_names()}
        out += [problem for key, problem in sop.field_refs if key not in fields]
    return out


def _gar_asks(files: WorkspaceFiles) -> dict[str, str]:
    """What a valid value of each slot a GAR ask row fills looks like (the row's metadata)."""
    out: dict[str, str] = {}
    for r in files.gar:
        if r.has("ask_user_input") and r.metadata:
            for p in r.params:
                out.setdefault(p.name, r.metadata)
    return out


def result_values(ws: Workspace) -> dict[str, dict[str, list[str]]]:
    """Per SOP, the values each field of its tools can take, where the GAR lists them ("the weather, one
    of Raining, Snowing, Sunny…"), so "when will it be sunny?" can be read against a result's fields."""
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
    settings = Settings(max_steps_per_turn=int(cfg.settings.get("max_steps_per_turn", 8)),
                        intent_threshold=float(cfg.settings.get("intent_threshold", 0.5)),
                        tool_timeout_s=float(cfg.settings.get("tool_timeout_s", 5.0)),
                        turn_wait_s=float(cfg.settings.get("turn_wait_s", Settings.turn_wait_s)))
    state_dir = ws.files.state_dir()
    url = state_url or os.environ.get("SOP_STATE_URL") or f"sqlite:///{state_dir / 'sessions.sqlite'}"
    st = store or open_state_store(url)
    # Zep Cloud when ZEP_API_KEY is set, else the state store's PostgreSQL database, else local SQLite
    mem = memory or open_preference_memory(state_dir, state_store=st)
    lexicon = {w for term in ws.vocab.categories + ws.vocab.brands for w in T.words(term)}
    lexicon |= {w for term in ws.vocab.categories for w in T.plural_forms(term)}
    commerce = Commerce(cfg.commerce, ws.vocab, cfg.currency) if cfg.commerce is not None else None
    extra = commerce.triggers(ws.sops) if commerce is not None else {}
    for sop_id, phrases in kb_triggers(ws.sops, ws.kb).items():
        extra[sop_id] = [*extra.get(sop_id, []), *phrases]
    rule = RuleBrain(ws.embedder, ws.sops, lexicon, extra)
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
    return Orchestrator(workspace_id=ws.files.id, sops=ws.sops, agents=agents, sop_agent=sop_agent, brain=the_brain,
                        gateway=gateway, store=st, memory=mem, vocab=ws.vocab, currency=cfg.currency,
                        settings=settings, store_name=cfg.name, commerce=commerce, greeting=cfg.greeting,
                        aliases=cfg.aliases, languages=cfg.languages, polite_particle=cfg.polite_particle,
                        handoff=cfg.handoff,
                        grounding_text=[f"{r.action} {r.metadata}" for r in ws.files.gar])


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
    from core.understanding.brains.llm import LLMBrain, OpenAIChat

    return LLMBrain(rule, OpenAIChat(llm), sops=ws.sops, slot_types=types, startable=startable,
                    tools=set(ws.tools), mode="llm" if chosen == "llm" else "hybrid",
                    intent_threshold=settings.intent_threshold)
