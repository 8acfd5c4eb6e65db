#!/usr/bin/env python3
"""svg_charts — small SVG charts for the reports, written as text with the standard library.

Functions take plain data and return SVG text (pure); save_* functions write files. Every
chart carries a <title> and <desc> for screen readers, uses no script, font or external
resource, and marks missing values ("not found", "not run") instead of inventing them.

    rank_chart(...)         per-query rank of each method (BM25, dense, RRF); lower is better
    grouped_bar_chart(...)  one value per group and series, e.g. nDCG@10 per collection and method
    line_chart(...)         series of (x, y) points, e.g. the index growth curve (files -> seconds)
    save_rank_chart(...)    eval_retrieval.py --svg-dir, labelled queries: DIR/demo-ranks.svg
    save_ndcg_chart(...)    eval_retrieval.py --svg-dir, a dataset: merges its nDCG@10 into
                            DIR/ndcg-by-collection.json and redraws DIR/ndcg-by-collection.svg
    draw_ndcg_chart(DIR)    redraws that chart from the JSON alone:
                            python3 -c 'import svg_charts; svg_charts.draw_ndcg_chart(".")' in reports/

The growth-curve chart is ready for the speed issue's index-growth measurements; no such
measurements exist yet, so no growth chart is written by any script today.
"""

from __future__ import annotations

import json
import math
import os
from xml.sax.saxutils import escape

FONT = "font-family=\"system-ui,-apple-system,'Segoe UI',Roboto,sans-serif\""
WIDTH = 760
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 230, 24, 64, 48
ROW_HEIGHT = 18
BAR_AREA_HEIGHT = 260
TICK_COUNT = 5
# colour-blind-safe (Okabe-Ito) colours and distinct shapes, so colour is never the only cue
SERIES_STYLE = (("#0072B2", "circle"), ("#E69F00", "square"), ("#009E73", "triangle"),
                ("#CC79A7", "diamond"), ("#56B4E9", "circle"), ("#D55E00", "square"))
MISSING_LABEL = "not found"
METHOD_ORDER = ("BM25 only", "embeddings only", "RRF (hybrid)")   # eval_retrieval's names, drawn in this order


def _attr(value: str) -> str:
    return escape(value, {'"': "&quot;"})


def _open(height: int, title: str, desc: str) -> list[str]:
    """Return the opening lines of an SVG document with its accessible title and description."""
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="t d">',
            f'<title id="t">{escape(title)}</title>', f'<desc id="d">{escape(desc)}</desc>',
            f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
            f'<text x="12" y="24" font-size="16" font-weight="600" {FONT}>{escape(title)}</text>']


def _note_lines(note: str) -> list[str]:
    """Return a note split into lines at '; ' so that it fits the chart's width."""
    return [part for part in note.split("; ") if part] if note else []


def _note(note: str, height: int) -> list[str]:
    """Return the note's text lines at the bottom of a chart of the given height."""
    lines = _note_lines(note)
    return [f'<text x="12" y="{height - 10 - 14 * (len(lines) - 1 - i)}" font-size="11" fill="#555555" '
            f'{FONT}>{escape(line)}</text>' for i, line in enumerate(lines)]


def _marker(shape: str, x: float, y: float, colour: str, label: str, size: float = 5.0) -> str:
    """Return one marker of a shape at (x, y) with a hover title."""
    tip = f"<title>{escape(label)}</title>"
    if shape == "square":
        return (f'<rect x="{x - size:.1f}" y="{y - size:.1f}" width="{2 * size:.1f}" height="{2 * size:.1f}" '
                f'fill="{colour}">{tip}</rect>')
    if shape in ("triangle", "diamond"):
        points = ([(x, y - size - 1), (x + size + 1, y + size), (x - size - 1, y + size)] if shape == "triangle"
                  else [(x, y - size - 1), (x + size + 1, y), (x, y + size + 1), (x - size - 1, y)])
        coords = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
        return f'<polygon points="{coords}" fill="{colour}">{tip}</polygon>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{size:.1f}" fill="{colour}">{tip}</circle>'


def _legend(names: list[str], y: float) -> list[str]:
    """Return a one-line legend of the series names with their markers."""
    out, x = [], float(MARGIN_LEFT)
    for i, name in enumerate(names):
        colour, shape = SERIES_STYLE[i % len(SERIES_STYLE)]
        out.append(_marker(shape, x, y - 4, colour, name))
        out.append(f'<text x="{x + 10:.1f}" y="{y:.1f}" font-size="12" {FONT}>{escape(name)}</text>')
        x += 24 + 7 * len(name)
    return out


def rank_chart(labels: list[str], ranks: dict[str, list[int | None]], depth: int,
               title: str, note: str = "") -> str:
    """Return a dot chart: one row per query, each method's rank of the target on a log
    axis from 1 to depth; None (not within depth) is drawn in a 'not found' column."""
    names = list(ranks)
    height = MARGIN_TOP + ROW_HEIGHT * max(len(labels), 1) + MARGIN_BOTTOM + 14 * len(_note_lines(note))
    plot_right = WIDTH - MARGIN_RIGHT - 70                 # the 'not found' column lies beyond it
    span = math.log10(max(depth, 2))

    def x_of(rank: int) -> float:
        return MARGIN_LEFT + (plot_right - MARGIN_LEFT) * math.log10(min(rank, depth)) / span

    out = _open(height, title, f"Rank of the expected passage per query for {', '.join(names)}; "
                               f"log scale 1 to {depth}, lower is better. {note}".strip())
    out += _legend(names, 46)
    bottom = MARGIN_TOP + ROW_HEIGHT * len(labels)
    ticks = [t for t in (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000) if t <= depth]
    for tick in ticks:
        x = x_of(tick)
        out.append(f'<line x1="{x:.1f}" y1="{MARGIN_TOP - 6}" x2="{x:.1f}" y2="{bottom}" stroke="#dddddd"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 16}" font-size="11" text-anchor="middle" {FONT}>{tick}</text>')
    missing_x = plot_right + 45
    out.append(f'<text x="{missing_x}" y="{bottom + 16}" font-size="11" text-anchor="middle" {FONT}>'
               f'{MISSING_LABEL}</text>')
    out.append(f'<text x="{(MARGIN_LEFT + plot_right) / 2:.1f}" y="{bottom + 34}" font-size="12" '
               f'text-anchor="middle" {FONT}>rank of the expected passage (log scale; lower is better)</text>')
    for row, label in enumerate(labels):
        y = MARGIN_TOP + ROW_HEIGHT * row + ROW_HEIGHT / 2
        if row % 2 == 0:
            out.append(f'<rect x="{MARGIN_LEFT - 4}" y="{y - ROW_HEIGHT / 2:.1f}" '
                       f'width="{WIDTH - MARGIN_LEFT - MARGIN_RIGHT + 4}" height="{ROW_HEIGHT}" fill="#f4f4f4"/>')
        shown = label if len(label) <= 34 else label[:33] + "…"
        out.append(f'<text x="{MARGIN_LEFT - 8}" y="{y + 4:.1f}" font-size="11" text-anchor="end" {FONT}>'
                   f'<title>{escape(label)}</title>{escape(shown)}</text>')
        for i, name in enumerate(names):
            colour, shape = SERIES_STYLE[i % len(SERIES_STYLE)]
            rank = ranks[name][row]
            offset = (i - (len(names) - 1) / 2) * 4           # keep equal ranks apart
            x = missing_x + offset * 2 if rank is None else x_of(rank)
            out.append(_marker(shape, x, y + offset, colour,
                               f"{label}: {name} {MISSING_LABEL if rank is None else f'rank {rank}'}", 4.0))
    out += _note(note, height)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def grouped_bar_chart(groups: list[str], series: dict[str, list[float | None]], title: str,
                      y_label: str, y_max: float = 1.0, note: str = "") -> str:
    """Return a grouped bar chart: one group per label, one bar per series, each bar
    labelled with its value; None is written as 'not run' with no bar."""
    names = list(series)
    height = MARGIN_TOP + BAR_AREA_HEIGHT + MARGIN_BOTTOM + 14 * len(_note_lines(note))
    left, right = 60, WIDTH - MARGIN_RIGHT
    base = MARGIN_TOP + BAR_AREA_HEIGHT
    out = _open(height, title, f"{y_label} per group ({', '.join(groups)}) and series "
                               f"({', '.join(names)}). {note}".strip())
    out += _legend(names, 46)
    for i in range(TICK_COUNT + 1):
        value = y_max * i / TICK_COUNT
        y = base - BAR_AREA_HEIGHT * i / TICK_COUNT
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#dddddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end" {FONT}>{value:.2f}</text>')
    out.append(f'<text x="14" y="{MARGIN_TOP + BAR_AREA_HEIGHT / 2:.1f}" font-size="12" '
               f'transform="rotate(-90 14 {MARGIN_TOP + BAR_AREA_HEIGHT / 2:.1f})" text-anchor="middle" '
               f'{FONT}>{escape(y_label)}</text>')
    group_width = (right - left) / max(len(groups), 1)
    bar_width = min(48.0, group_width * 0.8 / max(len(names), 1))
    for g, group in enumerate(groups):
        start = left + group_width * g + (group_width - bar_width * len(names)) / 2
        out.append(f'<text x="{left + group_width * (g + 0.5):.1f}" y="{base + 18}" font-size="12" '
                   f'text-anchor="middle" {FONT}>{escape(group)}</text>')
        for i, name in enumerate(names):
            colour, _ = SERIES_STYLE[i % len(SERIES_STYLE)]
            value = series[name][g]
            x = start + bar_width * i
            if value is None or (isinstance(value, float) and math.isnan(value)):
                cx = x + bar_width / 2 + 3                          # vertical, so it fits a narrow bar
                out.append(f'<text x="{cx:.1f}" y="{base - 4}" font-size="10" transform="rotate(-90 {cx:.1f} '
                           f'{base - 4})" fill="#777777" {FONT}>not run</text>')
                continue
            bar = BAR_AREA_HEIGHT * min(max(value, 0.0), y_max) / y_max
            out.append(f'<rect x="{x + 1:.1f}" y="{base - bar:.1f}" width="{bar_width - 2:.1f}" height="{bar:.1f}" '
                       f'fill="{colour}"><title>{escape(f"{group}, {name}: {value:.3f}")}</title></rect>')
            out.append(f'<text x="{x + bar_width / 2:.1f}" y="{base - bar - 4:.1f}" font-size="10" '
                       f'text-anchor="middle" {FONT}>{value:.3f}</text>')
    out.append(f'<line x1="{left}" y1="{base}" x2="{right}" y2="{base}" stroke="#333333"/>')
    out += _note(note, height)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def line_chart(series: dict[str, list[tuple[float, float]]], title: str, x_label: str,
               y_label: str, log_x: bool = False, note: str = "") -> str:
    """Return a line chart of (x, y) points per series (e.g. files indexed -> seconds);
    with log_x the x axis is logarithmic (x must then be > 0)."""
    names = list(series)
    points = [p for pts in series.values() for p in pts]
    height = MARGIN_TOP + BAR_AREA_HEIGHT + MARGIN_BOTTOM + 14 * len(_note_lines(note))
    left, right, base = 70, WIDTH - MARGIN_RIGHT, MARGIN_TOP + BAR_AREA_HEIGHT
    out = _open(height, title, f"{y_label} against {x_label} for {', '.join(names) or 'no series'}. {note}".strip())
    out += _legend(names, 46)
    if points:
        fx = (lambda v: math.log10(v)) if log_x else (lambda v: v)
        x_lo, x_hi = min(fx(p[0]) for p in points), max(fx(p[0]) for p in points)
        y_hi = max(p[1] for p in points) or 1.0
        x_hi = x_hi if x_hi > x_lo else x_lo + 1

        def xy(p: tuple[float, float]) -> tuple[float, float]:
            return (left + (right - left) * (fx(p[0]) - x_lo) / (x_hi - x_lo),
                    base - BAR_AREA_HEIGHT * p[1] / y_hi)
        for i in range(TICK_COUNT + 1):
            y = base - BAR_AREA_HEIGHT * i / TICK_COUNT
            out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#dddddd"/>')
            out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end" {FONT}>'
                       f'{y_hi * i / TICK_COUNT:.3g}</text>')
            xv = x_lo + (x_hi - x_lo) * i / TICK_COUNT
            out.append(f'<text x="{left + (right - left) * i / TICK_COUNT:.1f}" y="{base + 16}" font-size="11" '
                       f'text-anchor="middle" {FONT}>{(10 ** xv if log_x else xv):.3g}</text>')
        for i, name in enumerate(names):
            colour, shape = SERIES_STYLE[i % len(SERIES_STYLE)]
            coords = [xy(p) for p in sorted(series[name])]
            if len(coords) > 1:
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
                out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
            for (x, y), p in zip(coords, sorted(series[name])):
                out.append(_marker(shape, x, y, colour, f"{name}: {p[0]:g} -> {p[1]:g}", 3.5))
    else:
        out.append(f'<text x="{(left + right) / 2}" y="{base - BAR_AREA_HEIGHT / 2}" font-size="13" '
                   f'text-anchor="middle" fill="#777777" {FONT}>no measurements yet</text>')
    out.append(f'<line x1="{left}" y1="{base}" x2="{right}" y2="{base}" stroke="#333333"/>')
    out.append(f'<text x="{(left + right) / 2}" y="{base + 34}" font-size="12" text-anchor="middle" '
               f'{FONT}>{escape(x_label)}{" (log scale)" if log_x else ""}</text>')
    out.append(f'<text x="14" y="{MARGIN_TOP + BAR_AREA_HEIGHT / 2:.1f}" font-size="12" '
               f'transform="rotate(-90 14 {MARGIN_TOP + BAR_AREA_HEIGHT / 2:.1f})" text-anchor="middle" '
               f'{FONT}>{escape(y_label)}</text>')
    out += _note(note, height)
    out.append("</svg>")
    return "\n".join(out) + "\n"


# === Files — the only writers ===

def write_svg(path: str, text: str) -> str:
    """Write an SVG file (UTF-8) and return its path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def save_rank_chart(svg_dir: str, rows: list[dict], methods: list[str], depth: int,
                    method_names: dict[str, str], note: str = "") -> str:
    """Write DIR/demo-ranks.svg from eval_retrieval's labelled rows (queries with a target only)."""
    answerable = [r for r in rows if r["expected"]]
    labels = [f"{r['id']} {r['query']}" for r in answerable]
    ranks = {method_names[m]: [r["ranks"].get(m) for r in answerable] for m in methods}
    note = (f"{note}; " if note else "") + (f"'{MISSING_LABEL}': not in the method's top {depth} "
                                            "(RRF fuses only each method's candidate pool)")
    return write_svg(os.path.join(svg_dir, "demo-ranks.svg"),
                     rank_chart(labels, ranks, depth, "Demo set: rank of the expected passage per query",
                                note))


def save_ndcg_chart(svg_dir: str, collection: str, summaries: dict[str, dict[str, float]],
                    embeddings: str) -> str:
    """Merge one collection's nDCG@10 per method (and the embeddings it used) into
    DIR/ndcg-by-collection.json, the chart's data from real runs only, and redraw
    DIR/ndcg-by-collection.svg from all of it."""
    data_path = os.path.join(svg_dir, "ndcg-by-collection.json")
    try:
        with open(data_path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        data = {}
    data[collection] = {"embeddings": embeddings, "nDCG@10": {
        name: round(m["nDCG@10"], 4) for name, m in summaries.items()
        if not math.isnan(m.get("nDCG@10", float("nan")))}}
    os.makedirs(svg_dir, exist_ok=True)
    with open(data_path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False, indent=1, sort_keys=True)
        fh.write("\n")
    return draw_ndcg_chart(svg_dir)


def draw_ndcg_chart(svg_dir: str) -> str:
    """Redraw DIR/ndcg-by-collection.svg from DIR/ndcg-by-collection.json; return its path."""
    with open(os.path.join(svg_dir, "ndcg-by-collection.json"), encoding="utf-8") as fh:
        data = json.load(fh)
    groups = sorted(data)
    names = sorted({name for g in groups for name in data[g]["nDCG@10"]},
                   key=lambda n: (METHOD_ORDER.index(n) if n in METHOD_ORDER else len(METHOD_ORDER), n))
    series = {name: [data[g]["nDCG@10"].get(name) for g in groups] for name in names}
    models = sorted({data[g]["embeddings"] for g in groups})
    note = "; ".join(f"embeddings {m}{' (BM25 only)' if m == 'none' else ''}: " + ", ".join(g for g in groups if data[g]["embeddings"] == m)
                     for m in models)
    return write_svg(os.path.join(svg_dir, "ndcg-by-collection.svg"),
                     grouped_bar_chart(groups, series, "nDCG@10 per collection and method", "nDCG@10",
                                       note=note))
