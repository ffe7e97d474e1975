"""``python -m benchmarks.curves [DIR]``: benchmarks/RESULTS_CURVES.md and benchmarks/plots/*.png from the
scale-1.0 runs of benchmarks/run_all.sh (the JSON files in DIR, default results/scale): the issue's target
configuration side by side, tpmC and abort rate against clients and warehouses, CH-benCHmark after the OLTP run,
HTAP with 2 analytical clients, and the targets of issue 14 checked against the measured figures.

Several files may hold runs of one configuration (the same warehouses, scale and formulation, different client
counts); they are merged. Every comparison in the output is between systems measured in one invocation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT

OUT = ROOT / "benchmarks" / "RESULTS_CURVES.md"
PLOTS = ROOT / "benchmarks" / "plots"
ORDER = [
    "tique",
    "tique-mapi",
    "tique-noheld",
    "monetdb",
    "monetdb-oltp",
    "monetdb-mapi",
    "monetdb-oltp-mapi",
    "postgres",
]
NATIVE = ("monetdb", "monetdb-oltp")
NOISE = (
    "Measured on a 2-CPU machine shared with four other jobs (test suites, builds) that ran throughout, so every "
    "figure is noisy: compare only systems of one table (measured side by side in one invocation, one after "
    "another on the same data), read single figures as indicative, and expect the ordering of systems closer "
    "than about 1.5x to change between runs. Latencies are medians (p50) of the measured window."
)
Config = tuple[float, int, str]  # scale, warehouses, formulation


def _sorted(names: Any) -> list[str]:
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


Invocation = tuple[Config, str, str, dict[str, Any]]  # config, clients, file name, system -> metrics


def load(directory: Path) -> tuple[dict[Config, dict[str, dict[str, Any]]], list[Invocation], dict[str, Any]]:
    """TPC-C runs by (scale, warehouses, formulation) -> clients -> system (of several runs of one configuration,
    the one with the median tpmC); every invocation's side-by-side runs; and the other runs by file stem."""
    invocations: list[Invocation] = []
    other: dict[str, Any] = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text())
        settings = data.get("settings", {})
        if data.get("command", "tpcc") != "tpcc" or "by_clients" not in data:
            other[path.stem] = data
            continue
        key = (float(settings["scale"]), int(settings["warehouses"]), settings.get("formulation", "standard"))
        for clients, systems in data["by_clients"].items():
            runs = {name: m | {"when": data["machine"].get("when"), "file": path.name} for name, m in systems.items()}
            invocations.append((key, clients, path.name, runs))
    candidates: dict[Config, dict[str, dict[str, list[dict[str, Any]]]]] = {}
    for key, clients, _, runs in invocations:
        for name, m in runs.items():
            candidates.setdefault(key, {}).setdefault(clients, {}).setdefault(name, []).append(m)
    tpcc = {
        key: {c: {n: sorted(ms, key=lambda m: m["tpmC"])[(len(ms) - 1) // 2] for n, ms in by.items()}
              for c, by in per.items()}
        for key, per in candidates.items()
    }  # fmt: skip
    return tpcc, invocations, other


def _p50(m: dict[str, Any], kind: str) -> str:
    v = m.get("latency_ms", {}).get(kind, {}).get("p50")
    return "-" if v is None or v != v else f"{v:.0f}"


def _cons(m: dict[str, Any]) -> str:
    c = m.get("consistency")
    return "-" if not c else "ok" if c.get("all_ok") else "FAILED"


def tpcc_table(rows: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    lines = ["| run | system | tpmC | abort rate | errors | NewOrder p50 ms | Payment p50 ms | Delivery p50 ms | "
             "consistency |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for label, name, m in rows:
        lines.append(f"| {label} | {name} | {m['tpmC']:.0f} | {m['abort_rate']:.1%} | {m['errors']} | "
                     f"{_p50(m, 'NewOrder')} | {_p50(m, 'Payment')} | {_p50(m, 'Delivery')} | "
                     f"{_cons(m)} |")  # fmt: skip
    return lines


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "n/a"


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _target_invocations(invocations: list[Invocation], form: str) -> list[dict[str, Any]]:
    return [runs for key, clients, _, runs in invocations if key == (1.0, 4, form) and clients == "4"]


def _ratio_row(label: str, pairs: list[tuple[float, float]], goal: float) -> str:
    """Each run's ratio a / b (the systems side by side in one invocation), and their median against ``goal``."""
    ratios = [a / b for a, b in pairs]
    median = _median(ratios)
    each = ", ".join(f"{a:.0f} vs {b:.0f}" for a, b in pairs)
    runs = f"{len(pairs)} runs, median" if len(pairs) > 1 else "1 run"
    return f"| {label} | {each}: {runs} {median:.2f}x | {_yes(median >= goal)} |"


def target_rows(
    tpcc: dict[Config, dict[str, dict[str, Any]]], invocations: list[Invocation], other: dict[str, Any]
) -> list[str]:
    lines = ["| target (4 warehouses, scale 1.0, 4 clients) | measured | met |", "|---|---|---|"]
    for form in ("standard", "batched"):
        runs = _target_invocations(invocations, form)
        for other_name, goal in (("monetdb", 3.0), ("monetdb-oltp", 3.0), ("postgres", 0.3)):
            pairs = [(r["tique"]["tpmC"], r[other_name]["tpmC"]) for r in runs
                     if "tique" in r and r.get(other_name, {}).get("tpmC")]  # fmt: skip
            if pairs:
                lines.append(_ratio_row(f"tique >= {goal:g}x {other_name} tpmC ({form})", pairs, goal))
    for form in ("standard", "batched"):
        big = tpcc.get((1.0, 4, form), {}).get("4", {}).get("tique")
        small = tpcc.get((0.1, 4, form), {}).get("4", {}).get("tique")
        if big and small:
            a, b = big["latency_ms"]["NewOrder"]["p50"], small["latency_ms"]["NewOrder"]["p50"]
            lines.append(f"| tique NewOrder p50 at scale 1.0 <= 1.5x at scale 0.1 ({form}; separate invocations) | "
                         f"{a:.0f} ms vs {b:.0f} ms: {a / b:.2f}x | {'yes' if a <= 1.5 * b else 'no'} |")  # fmt: skip
    for stem in ("ch_w4", "ch_w10"):
        ch = other.get(stem)
        if not ch:
            continue
        s = ch["systems"]
        w = ch["settings"]["warehouses"]
        tq = s.get("tique", {}).get("total_s")
        for native in NATIVE:
            n = s.get(native, {}).get("total_s")
            if tq and n:
                lines.append(f"| CH total after the OLTP run, {w} warehouses: tique <= 1.3x {native} | "
                             f"{tq:.1f} s vs {n:.1f} s: {_ratio(tq, n)} | {_yes(tq <= 1.3 * n)} |")  # fmt: skip
        pg = s.get("postgres", {}).get("total_s")
        if tq and pg:
            lines.append(f"| CH total after the OLTP run, {w} warehouses: tique >= 3x faster than PostgreSQL | "
                         f"{tq:.1f} s vs {pg:.1f} s: {_ratio(pg, tq)} faster | {_yes(pg >= 3 * tq)} |")  # fmt: skip
    htap = other.get("htap_w4")
    if htap and "tique" in htap["systems"]:
        runs = htap["systems"]["tique"]["runs"]
        alone, shared = runs.get("4-0", {}).get("tpmC"), runs.get("4-2", {}).get("tpmC")
        if alone and shared is not None:
            loss = 1 - shared / alone
            lines.append(f"| HTAP, 4 warehouses: tique OLTP loses <= 30% beside 2 analytical clients (defaults) | "
                         f"{alone:.0f} -> {shared:.0f} tpmC: {loss:.0%} lost | {_yes(loss <= 0.3)} |")  # fmt: skip
    return lines


def _yes(met: bool) -> str:
    return "yes" if met else "no"


def _color(name: str) -> str:
    return f"C{ORDER.index(name) if name in ORDER else len(ORDER)}"


def _figure() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_clients(tpcc: dict[Config, dict[str, dict[str, Any]]], path: Path) -> bool:
    plt = _figure()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    drawn = False
    for form, style in (("standard", "o-"), ("batched", "s--")):
        runs = tpcc.get((1.0, 4, form), {})
        for name in _sorted({n for systems in runs.values() for n in systems}):
            xs = sorted(int(c) for c in runs if name in runs[c])
            if len(xs) < 2 and form == "batched":
                continue
            color = _color(name)  # one colour per system, the line style tells the formulation
            ax1.plot(xs, [runs[str(x)][name]["tpmC"] for x in xs], style, color=color, label=f"{name} ({form})")
            ax2.plot(xs, [100 * runs[str(x)][name]["abort_rate"] for x in xs], style, color=color,
                     label=f"{name} ({form})")  # fmt: skip
            drawn = True
    ax1.set(xlabel="clients", ylabel="tpmC (log)", yscale="log", xscale="log", title="4 warehouses, scale 1.0")
    ax2.set(xlabel="clients", ylabel="aborted attempts (%)", xscale="log", title="abort rate")
    for ax in (ax1, ax2):
        ax.set_xticks([1, 4, 16], ["1", "4", "16"])
    ax1.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return drawn


def plot_warehouses(tpcc: dict[Config, dict[str, dict[str, Any]]], path: Path) -> bool:
    plt = _figure()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    points: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for (scale, w, form), runs in tpcc.items():
        if scale == 1.0 and form == "standard" and "4" in runs:
            for name, m in runs["4"].items():
                points.setdefault(name, []).append((w, m))
    for name in _sorted(points):
        pts = sorted(points[name], key=lambda p: p[0])
        ax1.plot([w for w, _ in pts], [m["tpmC"] for _, m in pts], "o-", color=_color(name), label=name)
        ax2.plot([w for w, _ in pts], [100 * m["abort_rate"] for _, m in pts], "o-", color=_color(name), label=name)
    ax1.set(xlabel="warehouses", ylabel="tpmC (log)", yscale="log", title="4 clients, scale 1.0, standard")
    ax2.set(xlabel="warehouses", ylabel="aborted attempts (%)", title="abort rate")
    ax1.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return bool(points)


def plot_ch(other: dict[str, Any], path: Path) -> bool:
    plt = _figure()
    chs = [(stem, other[stem]) for stem in ("ch_w4", "ch_w10") if stem in other]
    if not chs:
        return False
    fig, axes = plt.subplots(1, len(chs), figsize=(6 * len(chs), 4), squeeze=False)
    for ax, (_, ch) in zip(axes[0], chs):
        names = _sorted(ch["systems"])
        ax.bar(names, [ch["systems"][n]["total_s"] for n in names])
        ax.set(ylabel="sum of 22 query medians (s)", title=f"CH after OLTP, {ch['settings']['warehouses']} warehouses")
        ax.tick_params(axis="x", labelrotation=20)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_htap(other: dict[str, Any], path: Path) -> bool:
    htap = other.get("htap_w4")
    if not htap:
        return False
    plt = _figure()
    fig, ax = plt.subplots(figsize=(7, 4))
    names = _sorted(htap["systems"])
    width = 0.4
    for k, (key, label) in enumerate((("4-0", "OLTP alone"), ("4-2", "beside 2 analytical clients"))):
        ax.bar([i + k * width for i in range(len(names))],
               [htap["systems"][n]["runs"].get(key, {}).get("tpmC", 0) for n in names], width, label=label)  # fmt: skip
    ax.set_xticks([i + width / 2 for i in range(len(names))], names)
    ax.set(ylabel="tpmC (log)", yscale="log", title="HTAP, 4 warehouses, 4 OLTP clients")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def profile_section(other: dict[str, Any], directory: Path) -> list[str]:
    """One client, no contention: per transaction type the mean time, the application's statements, and the
    engine calls with their time (embedded systems; PostgreSQL's driver is not traced), per formulation."""
    forms = [(form, other[f"profile_w4_{form}"]) for form in ("standard", "batched") if f"profile_w4_{form}" in other]
    if not forms:
        return []
    lines = ["### Where a transaction's time goes, one client, 4 warehouses", "",
             "`python -m benchmarks profile` (each transaction type run `count` times after 20 of warm-up, no other "
             "client; tique's checkpointer running): mean ms / statements / engine calls / ms inside the engine. "
             f"Runs: {_settings_line({f'profile_w4_{form}.json' for form, _ in forms}, directory)}.", "",
             "| formulation | system | NewOrder | Payment | OrderStatus | Delivery | StockLevel |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for form, data in forms:
        for name in _sorted(data["systems"]):
            types = data["systems"][name]["types"]
            cells = []
            for kind in ("NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel"):
                m = types.get(kind, {})
                calls = "-" if m.get("engine_calls") is None else m["engine_calls"]
                inside = "-" if m.get("engine_ms") is None else m["engine_ms"]
                cells.append(f"{m.get('mean_ms')} / {m.get('statements')} / {calls} / {inside}")
            lines.append(f"| {form} | {name} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _settings_line(files: set[str], directory: Path) -> str:
    parts = []
    for name in sorted(files):
        data = json.loads((directory / name).read_text())
        s, m = data["settings"], data["machine"]
        command = data.get("command")
        if command == "profile":
            how = f"{s.get('count')} of each transaction type"
        elif command == "ch":
            how = f"{s.get('oltp_seconds')} s OLTP run"
        else:
            how = f"{s.get('duration')} s runs, warm-up {s.get('warmup')} s"
        parts.append(f"`{name}`: {m.get('when')}, commit {str(m.get('git_commit'))[:10]}, {how}")
    return "; ".join(parts)


def main(argv: list[str]) -> int:
    directory = Path(argv[0]) if argv else ROOT / "results" / "scale"
    tpcc, invocations, other = load(directory)
    PLOTS.mkdir(exist_ok=True)
    rel = "plots"
    lines = ["## Curves at TPC-C scale 1.0 (issue 14, items 4 and 5)", "", NOISE, "",
             "Systems: `tique` (embedded, checkpointer every 5 s, every second before 2026-11-27, prepared "
             "statements; its short statements run "
             "on MonetDB's `minimal_fast` pipeline, its analytical ones on `default_pipe`), `tique-mapi` (the same "
             "over a `tique serve`), `monetdb` (native MonetDB transactions, embedded, default pipeline), "
             "`monetdb-oltp` (the same, every transactional session `SET optimizer = 'minimal_fast'`, the pipeline "
             "tique uses for its point statements; analytical sessions keep the default pipeline), `postgres` "
             "(PostgreSQL 15, REPEATABLE READ). Formulations (`--formulation`, the same SQL for every system): "
             "`standard` reads one row per SELECT; `batched` reads NewOrder's items in one SELECT, its stock rows in "
             "one more, and Delivery's ten districts in one SELECT per table. Conflict aborts are retried; "
             "abort rate = aborted attempts / all attempts.", ""]  # fmt: skip
    lines += ["### Targets", "", *target_rows(tpcc, invocations, other), ""]
    rows = []
    for form in ("standard", "batched"):
        for k, runs in enumerate(_target_invocations(invocations, form), start=1):
            secs = next(iter(runs.values()))["duration_s"]
            rows += [(f"{form}, run {k} ({secs:.0f} s)", n, runs[n]) for n in _sorted(runs)]
    if rows:
        files = {m["file"] for _, _, m in rows}
        lines += ["### 4 warehouses, 4 clients (the target configuration)", "", *tpcc_table(rows), "",
                  f"Runs: {_settings_line(files, directory)}.", ""]  # fmt: skip
    curve_rows = []
    for form in ("standard", "batched"):
        runs = tpcc.get((1.0, 4, form), {})
        for c in sorted(runs, key=int):
            curve_rows += [(f"{form}, {c} clients", n, runs[c][n]) for n in _sorted(runs[c])]
    if curve_rows and plot_clients(tpcc, PLOTS / "curves_clients.png"):
        files = {m["file"] for _, _, m in curve_rows}
        lines += ["### Clients 1, 4, 16 at 4 warehouses", "", *tpcc_table(curve_rows), "",
                  f"Runs: {_settings_line(files, directory)}.", "",
                  f"![tpmC and abort rate by clients]({rel}/curves_clients.png)", ""]  # fmt: skip
    wh_rows = []
    for scale, w, form in sorted(tpcc):
        if scale == 1.0 and w != 4:
            for c in sorted(tpcc[(scale, w, form)], key=int):
                runs = tpcc[(scale, w, form)][c]
                wh_rows += [(f"{w} warehouses, {form}, {c} clients", n, runs[n]) for n in _sorted(runs)]
    if wh_rows and plot_warehouses(tpcc, PLOTS / "curves_warehouses.png"):
        files = {m["file"] for _, _, m in wh_rows}
        lines += ["### 1 and 10 warehouses", "", *tpcc_table(wh_rows), "", f"Runs: {_settings_line(files, directory)}.",
                  "", f"![tpmC and abort rate by warehouses (4 clients)]({rel}/curves_warehouses.png)", ""]  # fmt: skip
    small = [(f"scale {s}, {w} warehouses, {form}, {c} clients", n, runs[n])
             for (s, w, form), by in sorted(tpcc.items()) if s != 1.0
             for c, runs in by.items() for n in runs]  # fmt: skip
    if small:
        files = {m["file"] for _, _, m in small}
        lines += ["### The same at scale 0.1 (for the NewOrder p50 target)", "", *tpcc_table(small), "",
                  f"Runs: {_settings_line(files, directory)}.", ""]  # fmt: skip
    for stem in ("ch_w4", "ch_w10"):
        ch = other.get(stem)
        if not ch:
            continue
        names = _sorted(ch["systems"])
        w = ch["settings"]["warehouses"]
        lines += [f"### CH-benCHmark after the OLTP run, {w} warehouses", "",
                  f"A {ch['settings']['oltp_seconds']:.0f}-second TPC-C run ({ch['settings']['clients']} clients, "
                  f"{ch['settings'].get('formulation', 'standard')} formulation) first; tique's checkpointer paused "
                  "from its start, so the queries read every version it wrote; then each query "
                  f"{ch['settings']['repeat']} times, median seconds. "
                  f"Run: {_settings_line({stem + '.json'}, directory)}.",
                  "", "| query | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]  # fmt: skip
        for q in [str(i) for i in range(1, 23)]:
            lines.append(f"| Q{q} | " + " | ".join(str(ch["systems"][n]["queries"].get(q, "error")) for n in names)
                         + " |")  # fmt: skip
        lines.append("| **total** | " + " | ".join(f"**{ch['systems'][n]['total_s']:.2f}**" for n in names) + " |")
        lines.append("| OLTP tpmC before | " + " | ".join(f"{ch['systems'][n].get('oltp', {}).get('tpmC', 0):.0f}"
                                                        for n in names) + " |")  # fmt: skip
        pending = {n: ch["systems"][n].get("cache_versions") for n in names
                   if ch["systems"][n].get("cache_versions") is not None}  # fmt: skip
        lines += ["", "Each system ran its own OLTP run first, so the data (and the answers) differ between systems. "
                  f"Versions in tique's Cache when the queries began: {pending or '-'}.", ""]  # fmt: skip
    if plot_ch(other, PLOTS / "curves_ch.png"):
        lines += [f"![CH totals]({rel}/curves_ch.png)", ""]
    htap = other.get("htap_w4")
    if htap and plot_htap(other, PLOTS / "curves_htap.png"):
        lines += ["### HTAP, 4 warehouses, 4 OLTP clients beside 0 and 2 analytical clients", "",
                  f"Default settings (no worker or slot limits). Run: {_settings_line({'htap_w4.json'}, directory)}.",
                  "", "| system | analytical clients | tpmC | abort rate | OLTP lost | queries/min | query median s |",
                  "|---|---|---|---|---|---|---|"]  # fmt: skip
        for n in _sorted(htap["systems"]):
            runs = htap["systems"][n]["runs"]
            alone = runs.get("4-0", {}).get("tpmC")
            for key in ("4-0", "4-2"):
                r = runs.get(key)
                if r:
                    lost = f"{1 - r['tpmC'] / alone:.0%}" if alone and key != "4-0" else "-"
                    lines.append(f"| {n} | {r['olap_clients']} | {r['tpmC']:.0f} | {r['abort_rate']:.1%} | {lost} | "
                                 f"{r['olap_queries_per_min']} | {r['olap_query_median_s']} |")  # fmt: skip
        lines += ["", f"![HTAP]({rel}/curves_htap.png)", ""]
    lines += profile_section(other, directory)
    skipped = {}
    for data in [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]:
        skipped.update({n: r for n, r in (data.get("skipped") or {}).items() if r})
    if skipped:
        lines += ["Skipped or failed: " + "; ".join(f"{n}: {r}" for n, r in skipped.items()), ""]
    notes = ROOT / "benchmarks" / "RESULTS_CURVES_NOTES.md"  # the analysis, written by hand after looking at a run
    if notes.exists():
        lines += [notes.read_text().strip(), ""]
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT} and {PLOTS}/curves_*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
