"""summary.md as an HTML page (summary.html, for the Snakemake report): the markdown
that summary.md uses (headings, paragraphs, lists (one level of sub-items), block quotes, tables, **bold**,
`code`), nothing more, so no markdown package is needed. A wide table scrolls within
the page; a cell holding one number is right-aligned; each heading has an anchor (its
slug), and "see 'Data quality' below" links to it.

front_page(): the summary as the sweep's front page: the setup block, the opening
sentences, a table of contents and links (data quality, the fusion map, each model's
page, the tables), then the figures inline with their captions (figures/<name>/<scope>.png
beside its .rst), then the summary's sections."""
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
         " tr:nth-child(even) td{background:#fafafa}"
         " figure{margin:14px 0 22px} figure img{max-width:100%;border:1px solid #eee}"
         " figcaption{font-size:12.5px;color:#444;max-width:900px} nav.toc{background:#f6f8fa;padding:8px 14px;"
         "border:1px solid #ddd;margin:10px 0} nav.toc a{margin-right:12px} .setup td{border:none;padding:1px 10px 1px 0}")
SUB_ITEM = "  - "   # a list item under the one above
# a cell holding one number, with or without its unit: right-aligned
NUMBER = re.compile(r"^[-+]?(\d[\d,]*\.?\d*|\.\d+)(e[-+]?\d+)?\s*(us|ms|s|%|x|MB|GB|TB/s|GB/s)?$")


def _td(c: str) -> str:
    return f"<td class='num'>{inline(c)}</td>" if NUMBER.match(c) else f"<td>{inline(c)}</td>"


def slug(text: str) -> str:
    """A heading's anchor: lowercase words joined by '-'."""
    return re.sub(r"[^a-z0-9]+", "-", re.sub(r"[`*]", "", text).lower()).strip("-")


def inline(text: str) -> str:
    t = html.escape(text, quote=False)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = re.sub(r"see &#x27;([^&]+)&#x27; below|see '([^']+)' below",
               lambda m: f"see <a href='#{slug(m.group(1) or m.group(2))}'>{m.group(1) or m.group(2)}</a> below", t)
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
            out.append(f"<h{n} id='{slug(m.group(2))}'>{inline(m.group(2))}</h{n}>")
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


def _split(markdown: str) -> tuple[str, str, str]:
    """(title line, the opening: everything before the first '## ', the sections)."""
    lines = markdown.splitlines()
    title = lines[0][2:] if lines and lines[0].startswith("# ") else "fusionlab sweep"
    body = lines[1:] if lines and lines[0].startswith("# ") else lines
    cut = next((i for i, ln in enumerate(body) if ln.startswith("## ")), len(body))
    return title, "\n".join(body[:cut]), "\n".join(body[cut:])


def figure_block(png: str, caption: str, anchor: str) -> str:
    """One figure inline: its image (a path or data URI) and its caption."""
    return (f"<figure id='{anchor}'><a href='{html.escape(png)}'><img src='{html.escape(png)}' loading='lazy' "
            f"alt='{html.escape(anchor)}'></a><figcaption>{inline(caption.strip())}</figcaption></figure>")


def unique_ids(body: str) -> str:
    """body with each repeated id (a model's heading under several sections) numbered
    from its second use ('bert', 'bert-2'), so that every anchor names one place."""
    seen: dict = {}

    def one(m):
        n = seen[m.group(1)] = seen.get(m.group(1), 0) + 1
        return f"id='{m.group(1)}'" if n == 1 else f"id='{m.group(1)}-{n}'"
    return re.sub(r"id='([^']*)'", one, body)


def front_page(markdown: str, setup: list[tuple[str, str]], figures: list[tuple[str, str, str, str]],
               links: list[tuple[str, str]]) -> str:
    """The summary as the front page: the setup block (setup: (what, value) rows), the
    opening sentences, a table of contents (the summary's sections, the figures and
    links: (text, href)), the figures inline (figures: (category, name, png href, caption)
    in the report's order), then the summary's sections."""
    title, opening, sections = _split(markdown)
    heads = [h[3:] for h in sections.splitlines() if h.startswith("## ")]
    toc = ("<nav class='toc'><b>Contents</b>: <a href='#figures'>Figures</a> "
           + " ".join(f"<a href='#{slug(h)}'>{inline(h)}</a>" for h in heads) + "<br><b>Pages</b>: "
           + " ".join(f"<a href='{html.escape(href)}'>{inline(text)}</a>" for text, href in links) + "</nav>")
    rows = "".join(f"<tr><td><b>{inline(k)}</b></td><td>{inline(v)}</td></tr>" for k, v in setup)
    figs, last = [], None
    for category, name, png, caption in figures:
        if category != last:
            figs.append(f"<h3 id='{slug(category)}'>{inline(category)}</h3>")
            last = category
        figs.append(figure_block(png, caption, slug(name)))
    body = unique_ids(f"<h1>{inline(title)}</h1><table class='setup'>{rows}</table>\n" + toc
                      + "\n".join(_blocks(opening.splitlines())) + "<h2 id='figures'>Figures</h2>" + "\n".join(figs)
                      + "\n" + "\n".join(_blocks(sections.splitlines())))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")
