"""summary.md as an HTML page (summary.html, for the Snakemake report): the markdown
that summary.md uses (headings, paragraphs, lists (one level of sub-items), block quotes, tables, **bold**,
`code`), nothing more, so no markdown package is needed. A wide table scrolls within
the page; a cell holding one number is right-aligned."""
from __future__ import annotations

import html
import re

STYLE = ("body{font-family:system-ui,sans-serif;font-size:14px;line-height:1.45;max-width:1100px;margin:16px auto;"
         "padding:0 12px;color:#222} table{border-collapse:collapse;margin:8px 0 16px;font-size:12.5px}"
         "td,th{border:1px solid #ccc;padding:3px 7px;text-align:left} th{background:#f0f0f0}"
         "blockquote{border-left:4px solid #d9822b;background:#fff7ee;margin:10px 0;padding:6px 14px}"
         "code{background:#f3f3f3;padding:0 3px} h1{font-size:22px} h2{font-size:18px;margin-top:26px;"
         "border-bottom:1px solid #ddd} h3{font-size:15px}"
         " .wide{overflow-x:auto;max-width:100%} th{vertical-align:bottom}"
         " td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
         " tr:nth-child(even) td{background:#fafafa}")
SUB_ITEM = "  - "   # a list item under the one above
# a cell holding one number, with or without its unit: right-aligned
NUMBER = re.compile(r"^[-+]?(\d[\d,]*\.?\d*|\.\d+)(e[-+]?\d+)?\s*(us|ms|s|%|x|MB|GB|TB/s|GB/s)?$")


def _td(c: str) -> str:
    return f"<td class='num'>{inline(c)}</td>" if NUMBER.match(c) else f"<td>{inline(c)}</td>"


def inline(text: str) -> str:
    t = html.escape(text, quote=False)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", t)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _blocks(lines: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        m = re.match(r"^(#{1,4}) (.*)", line)
        if m:
            n = len(m.group(1))
            out.append(f"<h{n}>{inline(m.group(2))}</h{n}>")
            i += 1
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i])
                i += 1
            head, body = _cells(rows[0]), [_cells(r) for r in rows[2:]]
            out.append("<div class='wide'><table><tr>" + "".join(f"<th>{inline(c).replace('_', '_<wbr>')}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(_td(c) for c in r) + "</tr>" for r in body)
                       + "</table></div>")
        elif line.startswith(">"):
            quoted = []
            while i < len(lines) and lines[i].startswith(">"):
                quoted.append(lines[i][1:].lstrip())
                i += 1
            out.append("<blockquote>" + "\n".join(_blocks(quoted)) + "</blockquote>")
        elif line.startswith("- "):
            items = []   # (item, its sub-items: the lines under it that start with SUB_ITEM)
            while i < len(lines) and (lines[i].startswith("- ") or (items and lines[i].startswith(SUB_ITEM))):
                if lines[i].startswith("- "):
                    items.append((lines[i][2:], []))
                else:
                    items[-1][1].append(lines[i][len(SUB_ITEM):])
                i += 1
            out.append("<ul>" + "".join(f"<li>{inline(x)}" + ("<ul>" + "".join(f"<li>{inline(y)}</li>" for y in sub)
                                                                + "</ul>" if sub else "") + "</li>"
                                        for x, sub in items) + "</ul>")
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not re.match(r"^(#|\||>|- )", lines[i]):
                para.append(lines[i])
                i += 1
            out.append(f"<p>{inline(' '.join(para))}</p>")
    return out


def page(markdown: str, title: str = "fusionlab sweep summary") -> str:
    """A standalone HTML page of the markdown."""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(_blocks(markdown.splitlines())) + "\n</body></html>\n")
