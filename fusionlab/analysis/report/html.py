"""summary.md as an HTML page (summary.html, for the Snakemake report): the markdown
that summary.md uses (headings, paragraphs, lists, block quotes, tables, **bold**,
`code`), nothing more, so no markdown package is needed."""
from __future__ import annotations

import html
import re

STYLE = ("body{font-family:system-ui,sans-serif;font-size:14px;line-height:1.45;max-width:1100px;margin:16px auto;"
         "padding:0 12px;color:#222} table{border-collapse:collapse;margin:8px 0 16px;font-size:12.5px}"
         "td,th{border:1px solid #ccc;padding:3px 7px;text-align:left} th{background:#f0f0f0}"
         "blockquote{border-left:4px solid #d9822b;background:#fff7ee;margin:10px 0;padding:6px 14px}"
         "code{background:#f3f3f3;padding:0 3px} h1{font-size:22px} h2{font-size:18px;margin-top:26px;"
         "border-bottom:1px solid #ddd} h3{font-size:15px}")


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
            out.append("<table><tr>" + "".join(f"<th>{inline(c)}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</table>")
        elif line.startswith(">"):
            quoted = []
            while i < len(lines) and lines[i].startswith(">"):
                quoted.append(lines[i][1:].lstrip())
                i += 1
            out.append("<blockquote>" + "\n".join(_blocks(quoted)) + "</blockquote>")
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(lines[i][2:])
                i += 1
            out.append("<ul>" + "".join(f"<li>{inline(x)}</li>" for x in items) + "</ul>")
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
