"""Read a STAR flowchart: which nodes ask, query, inform, branch, greet and close.

A STAR chart is a ``replies`` map (node -> the wizard's canonical text) and a ``graph`` map
(node -> next node). Its branches are implicit: outcome nodes ("Succeeded"/"Failed",
"Available"/"Unavailable", "Yes"/"No", "Info missing. Can't remember ...") have no incoming
edge and lead somewhere; the step they branch off is left for the reader to see in the picture.
This module recovers that structure from the chart's own words and shape, with no knowledge of
any particular task:

* the greeting is the root whose reply greets; the flow starts at its successor;
* a query is a node whose reply starts with "Query";
* outcomes are the other roots; a short yes/no reply answers a question, a reply about missing or
  forgotten information is a customer who cannot answer, anything else is a query result
  (negative when it says so: failed, unavailable, …);
* result outcomes pair up in the order the chart lists them and attach, in flow order, to queries
  that have no successor; a yes/no pair attaches to the first question that has none; an
  "unable" outcome attaches to the asks whose topic its text names;
* asks are ``*ask*`` nodes (and questions answered yes/no); each is matched to the API input it
  collects by the words they share (rarer words count more), then by flow and schema order;
* a goodbye ends the flow; an "anything else?" the chart puts after a step stays, as the flow's
  last message (the chart decides whether to offer more help); a "nothing found" reply outside the
  graph is where a query with no result goes.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from core.importers.star_api import FAILURE
from core.importers.star_format import ApiField, StarTask, split_camel
from core.language import text as T

QUERY = re.compile(r"^\s*query\b", re.I)
GREETS = re.compile(r"^\s*(hello|hi|hey|good (morning|afternoon|evening)|greetings|welcome)\b", re.I)
CLOSING = re.compile(r"\b(goodbye|bye)\b", re.I)
MORE = re.compile(r"\banything else\b", re.I)
UNABLE = re.compile(r"\b(missing|forgot|forgotten|remember|unknown|don'?t (know|have)|not (known|provided|given))\b",
                    re.I)
NOTHING_FOUND = re.compile(r"\b(no|nothing|cannot|can'?t|could ?n[o']t|unable to)\b.{0,40}\b(match\w*|found|find)\b",
                           re.I)
MIN_MATCH = 1.0  # a word unique to one API input, or two shared ones
QUESTION_HINTS = {"your": ("customer",), "where": ("location", "address", "place"), "when": ("date", "day", "time")}
WEAK_MATCH = 0.5
# a word at most two inputs and two asks use: better than pairing by position (a word unique to one input
# that two asks use, once no other input matches as well)
SHARED_MATCH = 0.25


@dataclass
class Outcome:
    """A root node that is one way out of an earlier step."""

    id: str
    kind: str  # yes | no | unable | positive | negative
    target: str


@dataclass
class Ask:
    """A node that asks the customer something and the slot the answer fills."""

    id: str
    slot: str
    field: ApiField | None = None  # the API input it collects (None for a yes/no question)
    yes_no: bool = False
    question: str = ""  # the chart's wording of the question
    optional: bool = False  # an "optional request": an API input not required, asked after all required ones


@dataclass
class Query:
    """A node that calls the task's API; ``constants`` are inputs the node itself fixes."""

    id: str
    constants: dict[str, str] = field(default_factory=dict)


@dataclass
class Flow:
    """What a STAR chart says, in terms of our SOP nodes."""

    task: StarTask
    start: str
    greeting: str | None
    asks: dict[str, Ask]
    queries: dict[str, Query]
    messages: list[str]
    results: dict[str, list[Outcome]]  # query id -> its result outcomes
    answers: dict[str, list[Outcome]]  # yes/no question id -> its yes/no outcomes
    unable: dict[str, Outcome]  # ask id -> where a customer who cannot answer goes
    closing: set[str]
    nothing_found: str | None
    notes: list[str]
    offers: set[str] = field(default_factory=set)  # "anything else?" messages the flow ends with

    def next_of(self, node: str) -> str | None:
        """The chart's successor of a node, with closing nodes read as the end (None)."""
        nxt = self.task.graph.get(node)
        return None if nxt is None or nxt in self.closing else nxt


def read_flow(task: StarTask) -> Flow:
    """Recover the SOP structure of a STAR chart (see the module docstring)."""
    return _Reader(task).read()


class _Reader:
    def __init__(self, task: StarTask) -> None:
        self.task = task
        self.graph = task.graph
        self.replies = task.replies
        self.notes: list[str] = []
        nodes = list(dict.fromkeys([*task.replies, *task.graph, *task.graph.values()]))
        self.nodes = nodes
        targets = set(task.graph.values())
        self.roots = [n for n in task.graph if n not in targets]

    def reply(self, node: str) -> str:
        return self.replies.get(node, node.replace("_", " "))

    def read(self) -> Flow:
        greeting = next((r for r in self.roots if GREETS.match(self.reply(r))), None)
        start = self.graph[greeting] if greeting else (self.roots[0] if self.roots else next(iter(self.graph), ""))
        outcomes = [self._outcome(r) for r in self.roots if r not in (greeting, start)]
        closing = {n for n in self.nodes if CLOSING.search(self.reply(n)) and n != start}
        queries = {n: Query(n) for n in self.nodes if QUERY.match(self.reply(n)) or n == "query"}
        for o in outcomes:
            queries.pop(o.id, None)
        flow = Flow(self.task, start, greeting, {}, queries, [], {}, {}, {}, closing, None, self.notes)
        self._attach_unable(flow, [o for o in outcomes if o.kind == "unable"])
        self._attach_branches(flow, outcomes)
        self._classify(flow)
        self._constants(flow)
        self._optional_requests(flow)
        return flow

    def _optional_requests(self, flow: Flow) -> None:
        """Asks for inputs the API does not require that follow every ask for a required one (the
        chart's "optional request": the API falls back to a default when the value is missing)."""
        api = self.task.api
        if api is None or not api.required:
            return
        required = [a.id for a in flow.asks.values() if a.field and a.field.name in api.required]
        for a in flow.asks.values():
            if required and a.field is not None and a.field.name not in api.required \
                    and all(a.id in self._reach(r, flow) for r in required):
                a.optional = True
                self.notes.append(f"ask {a.id!r} is an optional request ({a.field.name} is not required by the API)")

    # ------------------------------------------------------------------ outcomes
    def _outcome(self, node: str) -> Outcome:
        text = self.reply(node)
        kind = "positive"
        yes_no = T.yes_no(text) if len(T.words(text)) <= 2 else None
        if yes_no is not None:
            kind = "yes" if yes_no else "no"
        elif UNABLE.search(text):
            kind = "unable"
        elif FAILURE.search(text) or FAILURE.search(node.replace("_", " ")):
            kind = "negative"
        return Outcome(node, kind, self.graph[node])

    def _attach_unable(self, flow: Flow, unable: list[Outcome]) -> None:
        """Attach each "cannot answer" outcome to the asks its text names, as they become reachable."""
        every_ask = [n for n in self.nodes if self._is_ask(n)]
        weights = _idf({a: self._topic(a) for a in every_ask})
        todo = list(unable)
        progress = True
        while todo and progress:
            progress = False
            asks = [n for n in self._order(flow) if self._is_ask(n)]
            for o in list(todo):
                said = set(_content(self.reply(o.id)))
                named = [a for a in asks if o.target != a and sum(weights[a].get(w, 0.0) for w in said) >= 0.5]
                if named:
                    for a in named:
                        flow.unable.setdefault(a, o)
                    todo.remove(o)
                    progress = True
        first_query = next((n for n in self._order(flow) if n in flow.queries), None)
        for o in todo:
            self.notes.append(f"outcome {o.id!r} names no step; it follows every ask before the first query")
            for a in (n for n in self._order(flow) if self._is_ask(n)):
                if first_query is None or first_query in self._reach(a, flow):
                    flow.unable.setdefault(a, o)

    def _attach_branches(self, flow: Flow, outcomes: list[Outcome]) -> None:
        groups = _pairs([o for o in outcomes if o.kind in ("positive", "negative")])
        yes_no = [o for o in outcomes if o.kind in ("yes", "no")]
        progress = True
        while progress and (groups or yes_no):
            progress = False
            for node in self._order(flow):
                if self.graph.get(node) or node in flow.results or node in flow.answers:
                    continue
                if node in flow.queries and groups:
                    flow.results[node] = groups.pop(0)
                    progress = True
                    break
                if yes_no and node not in flow.queries and "?" in self.reply(node) and node not in flow.closing:
                    flow.answers[node], yes_no = yes_no, []
                    progress = True
                    break
        placed = [n for n in self._order(flow) if n != flow.start]
        for o in [*(o for g in groups for o in g), *yes_no]:
            base = next((n for n in placed if o.id != n and o.id.startswith(n)), None)
            if base is not None:  # "provide_status_update" beside "provide_status": another wording of that step
                self.notes.append(f"outcome {o.id!r} is a variant of {base!r}; {base!r} stands for it")
            else:
                self.notes.append(f"outcome {o.id!r} follows no step of the chart; left out")

    # ------------------------------------------------------------------ nodes
    def _classify(self, flow: Flow) -> None:
        order = self._order(flow)
        ask_ids = [n for n in order if n not in flow.queries and (self._is_ask(n) or n in flow.answers)]
        fields = self._match_fields([a for a in ask_ids if a not in flow.answers])
        for a in ask_ids:
            if a in flow.answers:
                flow.asks[a] = Ask(a, _snake(self._topic_id(a) or a), yes_no=True, question=self.reply(a))
            else:
                f = fields.get(a)
                slot = _snake(f.label) if f else _snake(self._topic_id(a) or a)
                flow.asks[a] = Ask(a, slot, f, question=self.reply(a))
        flow.messages = [n for n in order if n not in flow.asks and n not in flow.queries and n not in flow.closing]
        flow.offers = {n for n in flow.messages if MORE.search(self.reply(n))}
        found = [n for n in self.replies if n not in self.graph and n not in self.graph.values()
                 and ("nothing_found" in n or NOTHING_FOUND.search(self.reply(n)))]
        if flow.queries and found:
            flow.nothing_found = found[0]

    def _match_fields(self, asks: list[str]) -> dict[str, ApiField]:
        api = self.task.api
        if api is None or not asks:
            return {}
        inputs = [f for f in api.inputs if not _constant_field(f, list(self.replies.values()))]
        words = {f.name: set(_content(f"{split_camel(f.name)} {f.readable}")) for f in inputs}
        # a question about "your" name or number asks for the customer's own ("Customer Name", not "Driver Name")
        # and "where ...?" asks for a location, "when ...?" for a day or a time
        topics = {a: set(self._topic(a)) | {hint for word, hints in QUESTION_HINTS.items()
                                            if re.search(rf"\b{word}\b", self.reply(a), re.I) for hint in hints}
                  for a in asks}
        # a word counts less the more inputs, and the more asks, it appears in ("weather" in every weather question)
        by_inputs = Counter(w for ws in words.values() for w in ws)
        by_asks = Counter(w for ws in topics.values() for w in ws)
        score = [[sum(1.0 / (by_inputs[w] * by_asks[w]) for w in topics[a] & words[f.name]) for f in inputs]
                 for a in asks]
        # the weaker passes count only the words of the ask's own label and the hints, not of its sentence
        # ("the tides" in "Which harbour should I check the tides for?" names no input)
        own = {a: set(_content(self._topic_id(a).replace("_", " "))) | (topics[a] - set(self._topic(a)))
               for a in asks}
        weak = [[sum(1.0 / (by_inputs[w] * by_asks[w]) for w in own[a] & words[f.name]) for f in inputs]
                for a in asks]
        chosen = _best_assignment(score)
        out = {asks[i]: inputs[j] for i, j in chosen.items() if score[i][j] >= MIN_MATCH}
        taken = {f.name for f in out.values()}
        changed = True
        while changed:  # weaker matches next, each the one clear best left for its ask ("What hotel ...?"
            changed = False  # takes the hotel's name, then "Could I get your name?" the customer's)
            for i, a in enumerate(asks):
                if a in out:
                    continue
                free = sorted(((weak[i][j], j) for j, f in enumerate(inputs) if f.name not in taken), reverse=True)
                if free and free[0][0] >= WEAK_MATCH and (len(free) == 1 or free[0][0] > free[1][0]):
                    out[a] = inputs[free[0][1]]
                    taken.add(out[a].name)
                    changed = True
                    self.notes.append(f"ask {a!r} collects {out[a].name} (the one input sharing its words)")
        before = {nxt: node for node, nxt in self.graph.items()}
        for a in asks:  # leftovers: the next unmatched input after the one the chart's previous ask collects
            if a in out:
                continue
            prev = out.get(before.get(a, ""))
            last = inputs.index(prev) if prev is not None else -1
            free = [j for j, f in enumerate(inputs) if f.name not in taken]
            i = asks.index(a)
            sharing = sorted((j for j in free if weak[i][j] >= SHARED_MATCH), key=lambda j: -weak[i][j])
            later = sharing[:1] or [j for j in free if j > last] or free  # a shared word first, then position
            if later:
                out[a] = inputs[later[0]]
                taken.add(out[a].name)
                self.notes.append(f"ask {a!r} collects {out[a].name} (by position: no shared words)")
        return out

    def _constants(self, flow: Flow) -> None:
        api = self.task.api
        if api is None:
            return
        for q in flow.queries.values():
            said = set(T.words(f"{q.id.replace('_', ' ')} {self.reply(q.id)}"))
            for f in api.inputs:
                hit = next((c for c in f.categories if set(T.words(c)) <= said and T.words(c)), None)
                if hit is not None:
                    q.constants[f.name] = hit

    # ------------------------------------------------------------------ helpers
    def _is_ask(self, node: str) -> bool:
        return "ask" in node.lower().split("_") and not QUERY.match(self.reply(node))

    def _topic_id(self, node: str) -> str:
        parts = node.lower().split("_")
        return "_".join(parts[parts.index("ask") + 1:]) if "ask" in parts else ""

    def _topic(self, node: str) -> list[str]:
        return _content(f"{self._topic_id(node).replace('_', ' ')} {self.reply(node)}")

    def _edges(self, flow: Flow, node: str) -> list[str]:
        out = [self.graph[node]] if node in self.graph else []
        out += [o.target for o in flow.results.get(node, []) + flow.answers.get(node, [])]
        if node in flow.unable:
            out.append(flow.unable[node].target)
        return out

    def _order(self, flow: Flow) -> list[str]:
        """Nodes reachable from the start, breadth first, with the branches attached so far."""
        seen: list[str] = []
        todo = [flow.start]
        while todo:
            node = todo.pop(0)
            if node in seen or not node:
                continue
            seen.append(node)
            todo += self._edges(flow, node)
        return seen

    def _reach(self, node: str, flow: Flow) -> set[str]:
        seen: set[str] = set()
        todo = [node]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo += self._edges(flow, n)
        return seen


def _content(text: str) -> list[str]:
    return [T.singular(w) for w in T.tokens(text.replace("'s", "")) if len(w) > 1]


def _idf(topics: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Per node, each of its words weighted by 1 / the number of nodes that use it."""
    counts = Counter(w for words in topics.values() for w in set(words))
    return {node: {w: 1.0 / counts[w] for w in set(words)} for node, words in topics.items()}


def _pairs(outcomes: list[Outcome]) -> list[list[Outcome]]:
    """Result outcomes in chart order, grouped so each group has at most one of each polarity."""
    groups: list[list[Outcome]] = []
    for o in outcomes:
        if not groups or any(g.kind == o.kind for g in groups[-1]):
            groups.append([])
        groups[-1].append(o)
    return groups


def _constant_field(f: ApiField, replies: list[str]) -> bool:
    """An input a query node fixes itself (a request type named in a "Query Check" reply)."""
    said = {w for r in replies if QUERY.match(r) for w in T.words(r)}
    return bool(f.categories) and any(set(T.words(c)) <= said and T.words(c) for c in f.categories)


def _best_assignment(score: list[list[float]]) -> dict[int, int]:
    """Rows to columns maximising the total score (each used once)."""
    if not score or not score[0]:
        return {}
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(-np.asarray(score, dtype=float))
    return {int(r): int(c) for r, c in zip(rows, cols, strict=True)}


def _snake(label: str) -> str:
    return "_".join(T.words(split_camel(label).replace("-", " "))) or "answer"
