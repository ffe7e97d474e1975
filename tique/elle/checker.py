"""An Elle-style checker for list-append histories: history -> version orders -> dependency graph -> cycles
-> anomalies -> verdict.

Each key's value is a list that transactions append unique elements to, so a read reveals the key's whole
version history up to that point. The version order of a key is its longest read; every other read must be a
prefix of it. From it: ww (a writer's element follows another's), wr (a transaction read a list ending in
another's element), rw (a transaction read a list that another's element later extended), and, from wall
clocks, rt (one completed before the other began) dependencies. Cycles are classified as in Adya's and Elle's
work: G0 (ww only), G1c (ww and wr), G-single (exactly one rw), G-nonadjacent (several rw, none adjacent),
G2-item (other cycles with rw); a "-realtime" suffix when real-time edges are needed for the cycle.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import networkx as nx

from tique.elle.history import Op, Txn, pair

WW, WR, RW, RT = "ww", "wr", "rw", "rt"

# Which anomalies each model forbids (the realtime variants are forbidden by the "strong" models only).
_BASE_SI = {
    "G0",
    "G1a",
    "G1b",
    "G1c",
    "G-single",
    "G-nonadjacent",
    "lost-update",
    "internal",
    "incompatible-order",
    "duplicate-elements",
}
MODELS: dict[str, set[str]] = {
    "snapshot-isolation": _BASE_SI,
    "strong-snapshot-isolation": _BASE_SI | {f"{a}-realtime" for a in ("G0", "G1c", "G-single", "G-nonadjacent")},
    "serializable": _BASE_SI | {"G2-item"},
    "strong-serializable": _BASE_SI
    | {"G2-item"}
    | {f"{a}-realtime" for a in ("G0", "G1c", "G-single", "G-nonadjacent", "G2-item")},
}


@dataclass
class Anomaly:
    type: str
    txns: list[Txn]
    explanation: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "cycle": [t.id for t in self.txns], "explanation": self.explanation}


@dataclass
class Result:
    anomalies: dict[str, list[Anomaly]] = field(default_factory=dict)
    txn_count: int = 0
    stats: dict[str, int] = field(default_factory=dict)

    def add(self, anomaly: Anomaly, cap: int = 8) -> None:
        found = self.anomalies.setdefault(anomaly.type, [])
        if len(found) < cap:
            found.append(anomaly)

    def valid(self, model: str) -> bool:
        return not (set(self.anomalies) & MODELS[model])

    def verdicts(self) -> dict[str, bool]:
        return {model: self.valid(model) for model in MODELS}

    def to_json(self, model: str) -> dict[str, Any]:
        return {
            "valid?": self.valid(model),
            "model": model,
            "anomaly-types": sorted(self.anomalies),
            "anomalies": {k: [a.to_json() for a in v] for k, v in sorted(self.anomalies.items())},
            "verdicts": self.verdicts(),
            "stats": self.stats,
        }


# ---- stage 1: per-transaction and per-key facts --------------------------------------------------------------


def _external_reads(txn: Txn) -> dict[Any, tuple[Any, ...]]:
    """Per key, what the transaction saw of other transactions' work: its first read of the key, minus its own
    appends before that read (those are checked by the internal-consistency pass)."""
    own: dict[Any, list[Any]] = defaultdict(list)
    out: dict[Any, tuple[Any, ...]] = {}
    for m in txn.mops:
        if m.f == "append":
            own[m.key].append(m.value)
        elif m.value is not None and m.key not in out:
            mine = own[m.key]
            values = tuple(m.value)
            out[m.key] = values[: len(values) - len(mine)] if mine and values[-len(mine) :] == tuple(mine) else values
    return out


def _internal(txn: Txn) -> str | None:
    """A read must show the transaction's own earlier appends, after what it read before."""
    known: dict[Any, list[Any]] = {}  # the key's full value as this transaction must now see it
    tails: dict[Any, list[Any]] = {}  # own appends to a key whose earlier value is unknown
    for m in txn.mops:
        if m.f == "append":
            if m.key in known:
                known[m.key].append(m.value)
            else:
                tails.setdefault(m.key, []).append(m.value)
        elif m.value is not None:
            got = list(m.value)
            if m.key in known and got != known[m.key]:
                return f"read {m.key} = {got}, but its earlier reads and appends give {known[m.key]}"
            tail = tails.pop(m.key, [])
            if m.key not in known and tail and got[-len(tail) :] != tail:
                return f"read {m.key} = {got} does not end with its own appends {tail}"
            known[m.key] = got
    return None


def analyze(ops: list[Op], realtime: bool = True) -> Result:
    txns = pair(ops)
    result = Result(txn_count=len(txns))
    ok = [t for t in txns if t.type == "ok"]
    writer: dict[tuple[Any, Any], Txn] = {}
    final_append: dict[tuple[int, Any], Any] = {}
    for t in txns:
        for m in t.mops:
            if m.f == "append":
                writer[(m.key, m.value)] = t
                final_append[(t.id, m.key)] = m.value

    # internal consistency, duplicates
    for t in ok:
        problem = _internal(t)
        if problem:
            result.add(Anomaly("internal", [t], [f"{t.describe()}: {problem}"]))
        for m in t.mops:
            if m.f == "r" and m.value is not None and len(set(m.value)) != len(m.value):
                result.add(Anomaly("duplicate-elements", [t], [f"{t.describe()}: key {m.key} holds a duplicate"]))

    # version order per key: the longest read; every read must be a prefix of it
    reads: dict[Any, list[tuple[Txn, tuple[Any, ...]]]] = defaultdict(list)
    for t in ok:
        for m in t.mops:
            if m.f == "r" and m.value is not None:
                reads[m.key].append((t, tuple(m.value)))
    order: dict[Any, tuple[Any, ...]] = {}
    for key, seen in reads.items():
        longest = max((v for _, v in seen), key=len)
        for t, v in seen:
            if longest[: len(v)] != v:
                result.add(
                    Anomaly(
                        "incompatible-order", [t], [f"key {key}: read {list(v)} is not a prefix of {list(longest)}"]
                    )
                )
        order[key] = longest

    # aborted and intermediate reads
    for t in ok:
        for key, v in _external_reads(t).items():
            for x in v:
                w = writer.get((key, x))
                if w is not None and w.type == "fail":
                    result.add(
                        Anomaly(
                            "G1a",
                            [t, w],
                            [f"{t.describe()} read {x} of key {key}, appended by {w.describe()}, which failed"],
                        )
                    )
            if v:
                w = writer.get((key, v[-1]))
                if w is not None and w is not t and final_append.get((w.id, key)) != v[-1]:
                    result.add(
                        Anomaly(
                            "G1b",
                            [t, w],
                            [
                                f"{t.describe()} read key {key} ending in {v[-1]}, an "
                                f"intermediate append of {w.describe()}"
                            ],
                        )
                    )

    # lost update: two committed transactions read the same version of a key and both appended to it
    by_version: dict[tuple[Any, tuple[Any, ...]], list[Txn]] = defaultdict(list)
    for t in ok:
        external = _external_reads(t)
        appended = {m.key for m in t.mops if m.f == "append"}
        for key in appended & set(external):
            by_version[(key, external[key])].append(t)
    for (key, v), group in by_version.items():
        if len(group) > 1:
            result.add(
                Anomaly(
                    "lost-update",
                    group,
                    [f"{g.describe()} read key {key} = {list(v)} and appended to it" for g in group],
                )
            )

    graph = dependency_graph(txns, order, writer, realtime)
    result.stats = {"transactions": len(txns), "ok": len(ok), "edges": graph.number_of_edges(), "keys": len(order)}
    find_cycles(graph, result)
    return result


# ---- stage 2: the dependency graph ---------------------------------------------------------------------------


def dependency_graph(
    txns: list[Txn], order: dict[Any, tuple[Any, ...]], writer: dict[tuple[Any, Any], Txn], realtime: bool
) -> nx.DiGraph:
    g = nx.DiGraph()

    def edge(a: Txn, b: Txn, rel: str, why: str) -> None:
        if a is b:
            return
        if g.has_edge(a.id, b.id):
            g[a.id][b.id]["rels"].setdefault(rel, why)
        else:
            g.add_edge(a.id, b.id, rels={rel: why})

    committed = [t for t in txns if t.type in ("ok", "info")]
    for t in committed:
        g.add_node(t.id, txn=t)
    for key, versions in order.items():
        for x, y in pairwise(versions):
            a, b = writer.get((key, x)), writer.get((key, y))
            if a is not None and b is not None:
                edge(a, b, WW, f"appended {x}, then {b.describe()} appended {y} to key {key}")
    # A committed append no read observed comes after everything any read saw: a snapshot without it was
    # taken before it committed.
    unobserved: dict[Any, list[tuple[Any, Txn]]] = defaultdict(list)
    for (key, x), w in writer.items():
        if w.type == "ok" and x not in set(order.get(key, ())):
            unobserved[key].append((x, w))
    for key, later in unobserved.items():
        versions = order.get(key, ())
        last = writer.get((key, versions[-1])) if versions else None
        for x, w in later:
            if last is not None:
                edge(
                    last, w, WW, f"appended {versions[-1]}, then {w.describe()} appended {x} (never read) to key {key}"
                )
    for t in txns:
        if t.type != "ok":
            continue
        for key, v in _external_reads(t).items():
            versions = order.get(key, ())
            if v:
                w = writer.get((key, v[-1]))
                if w is not None:
                    edge(w, t, WR, f"appended {v[-1]} to key {key}, which {t.describe()} read")
            if len(v) < len(versions):
                nxt = writer.get((key, versions[len(v)]))
                if nxt is not None:
                    edge(
                        t,
                        nxt,
                        RW,
                        f"read key {key} = {list(v)}, which {nxt.describe()} then extended with {versions[len(v)]}",
                    )
            elif len(v) == len(versions):
                for x, w in unobserved.get(key, []):
                    edge(t, w, RW, f"read key {key} = {list(v)}, which {w.describe()} then extended with {x}")
    if realtime:
        _realtime_edges(committed, edge)
    for node in list(g.nodes):
        if "txn" not in g.nodes[node]:
            g.remove_node(node)
    return g


def _realtime_edges(txns: list[Txn], edge: Any) -> None:
    """T1 -> T2 when T1 completed before T2 was invoked; only the frontier (a transitive reduction)."""
    timed = [t for t in txns if t.invoke_time is not None and t.complete_time is not None and t.type == "ok"]
    events = sorted(
        [(t.invoke_time, 1, t.id, t) for t in timed] + [(t.complete_time, 0, t.id, t) for t in timed],
        key=lambda e: (e[0], e[1], e[2]),
    )
    frontier: dict[int, Txn] = {}
    preds: dict[int, list[int]] = {}
    for _, kind, _, t in events:
        if kind == 1:  # invoke
            preds[t.id] = list(frontier)
            for p in frontier.values():
                edge(p, t, RT, f"completed before {t.describe()} began")
        else:  # completion: it now covers everything that completed before it began
            for p in preds.get(t.id, []):
                frontier.pop(p, None)
            frontier[t.id] = t


# ---- stage 3: cycles and their classification ----------------------------------------------------------------


def _rels(g: nx.DiGraph, a: int, b: int) -> dict[str, str]:
    return g[a][b]["rels"]  # type: ignore[no-any-return]


def _subgraph(g: nx.DiGraph, allowed: set[str]) -> nx.DiGraph:
    sub = nx.DiGraph()
    sub.add_nodes_from(g.nodes)
    sub.add_edges_from((a, b) for a, b, d in g.edges(data=True) if set(d["rels"]) & allowed)
    return sub


def _explain(g: nx.DiGraph, cycle: list[int], preferred: list[str]) -> list[str]:
    lines = []
    for a, b in zip(cycle, cycle[1:] + cycle[:1]):
        rels = _rels(g, a, b)
        rel = next((r for r in preferred if r in rels), next(iter(rels)))
        lines.append(f"{g.nodes[a]['txn'].describe()} -{rel}-> T{b}: {rels[rel]}")
    return lines


def _cycle_through(sub: nx.DiGraph, a: int, b: int) -> list[int] | None:
    """The shortest cycle a -> b -> ... -> a using the edge a->b and a path in ``sub`` back from b."""
    try:
        path = nx.shortest_path(sub, b, a)
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        return None
    return [a, *path[:-1]]


def find_cycles(g: nx.DiGraph, result: Result) -> None:
    for realtime in (False, True):
        base = {WW, WR} | ({RT} if realtime else set())
        suffix = "-realtime" if realtime else ""
        full = _subgraph(g, base | {RW})
        for scc in nx.strongly_connected_components(full):
            if len(scc) < 2:
                continue
            sg = g.subgraph(scc)
            _classify_scc(sg, base, suffix, result)
    # a real-time variant is only news when the same kind of cycle needs the real-time edges
    for kind in [k for k in result.anomalies if k.endswith("-realtime")]:
        if kind.removesuffix("-realtime") in result.anomalies:
            del result.anomalies[kind]


def _classify_scc(g: nx.DiGraph, base: set[str], suffix: str, result: Result) -> None:
    ww_only = _subgraph(g, {WW} | (base - {WW, WR}))
    nonrw = _subgraph(g, base)
    edges = list(g.edges(data=True))
    # G0: a cycle of write-write dependencies
    for scc in nx.strongly_connected_components(ww_only):
        if len(scc) > 1:
            node = next(iter(scc))
            cycle = _cycle_through(ww_only, node, next(n for n in ww_only.successors(node) if n in scc))
            if cycle:
                result.add(Anomaly("G0" + suffix, [g.nodes[n]["txn"] for n in cycle], _explain(g, cycle, [WW, RT])))
                return
    wr_edges = [(a, b) for a, b, d in edges if WR in d["rels"]]
    rw_edges = [(a, b) for a, b, d in edges if RW in d["rels"]]
    full = _subgraph(g, base | {RW})
    # In order of severity; the first class with a cycle in this component is reported.
    searches: list[tuple[str, list[tuple[int, int]], Any, list[str]]] = [
        ("G1c", wr_edges, lambda a, b: _cycle_through(nonrw, a, b), [WR, WW, RT]),  # ww and wr, >= 1 wr
        ("G-single", rw_edges, lambda a, b: _cycle_through(nonrw, a, b), [RW, WR, WW, RT]),  # exactly one rw
        ("G-nonadjacent", rw_edges, lambda a, b: _nonadjacent_cycle(g, base, a, b), [RW, WR, WW, RT]),
        ("G2-item", rw_edges, lambda a, b: _cycle_through(full, a, b), [RW, WR, WW, RT]),  # any other with rw
    ]
    for kind, starts, find, preferred in searches:
        for a, b in starts:
            cycle = find(a, b)
            if cycle:
                result.add(Anomaly(kind + suffix, [g.nodes[n]["txn"] for n in cycle], _explain(g, cycle, preferred)))
                return


def _nonadjacent_cycle(g: nx.DiGraph, base: set[str], a: int, b: int) -> list[int] | None:
    """A cycle starting with rw a->b, with another rw, no two rw edges in a row (cyclically)."""
    # BFS over (node, last edge was rw, seen a second rw)
    start = (b, True, False)
    parent: dict[tuple[int, bool, bool], tuple[int, bool, bool] | None] = {start: None}
    frontier = [start]
    while frontier:
        nxt = []
        for state in frontier:
            node, last_rw, second = state
            for succ in g.successors(node):
                rels = set(_rels(g, node, succ))
                options: list[tuple[int, bool, bool]] = []
                if rels & base:
                    options.append((succ, False, second))
                if RW in rels and not last_rw:
                    options.append((succ, True, True))
                for opt in options:
                    if opt[0] == a:
                        if not opt[1] and opt[2]:  # no rw into a (its edge out is rw) and a second rw seen
                            nodes = []
                            cur: tuple[int, bool, bool] | None = state
                            while cur is not None:
                                nodes.append(cur[0])
                                cur = parent[cur]
                            return [a, *reversed(nodes)]
                        continue
                    if opt not in parent:
                        parent[opt] = state
                        nxt.append(opt)
        frontier = nxt
    return None


def summarize(result: Result, model: str) -> Iterable[str]:
    yield f"{result.txn_count} transactions, {result.stats.get('edges', 0)} dependency edges"
    for model_name, ok in result.verdicts().items():
        yield f"  {model_name}: {'valid' if ok else 'INVALID'}"
    if not result.anomalies:
        yield "no anomalies"
    for kind, found in sorted(result.anomalies.items()):
        allowed = kind not in MODELS[model]
        yield f"{kind}: {len(found)} shown{' (allowed by ' + model + ')' if allowed else ''}"
        for line in found[0].explanation:
            yield f"    {line}"
