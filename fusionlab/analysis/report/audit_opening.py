"""The audit of summary.md's opening sentences (one line per model, a segment per
configuration) against the records (tables/headline.csv), for `fusionlab audit`
(audit.audit calls check_opening(a, md, h)): each segment's variant, speedup, interval,
times, time saved and largest part against its record; bold or "beats" only for a
verdict of faster; host-bound and host-skewed said exactly where the record says so; a
higher estimate named where another variant's is higher. Numbers in text agree within
TEXT_REL of the larger."""
from __future__ import annotations

import re

import pandas as pd

from fusionlab.analysis.report import text
from fusionlab.analysis.report.audit_match import close
from fusionlab.analysis.sweep import tables

TEXT_REL = 0.0075   # numbers in text: 3 significant figures (fmt_time), 2 decimals (speedups)

TIME = r"-?[0-9.]+(?:e[-+]?\d+)? (?:us|ms|s)"
SEGMENT = re.compile(
    r"at (?P<where>batch \d+(?:, [^ ]+?)*?): (?P<who>\*\*(?P<bold>[^*]+)\*\* beats eager|(?P<lead>no variant beats "
    r"eager|no variant is decisively faster|no verdict from one repeat|no verdict); "
    r"the highest estimate, (?P<var>[^,:]+)(?:, [^:]+?)?): (?P<speed>-?[0-9.]+)x(?P<rest>.*?); "
    rf"(?P<t1>{TIME}) per iteration against eager's (?P<t2>{TIME})(?: timed beside it| in its own processes)"
    rf"(?:; (?P<saved>{TIME}) per iteration (?P<verb>saved|added)(?:, the largest part (?P<part>[^(]+?) "
    rf"\((?P<pv>{TIME}))?)?")
INTERVAL = re.compile(r"\[(-?[0-9.]+), (-?[0-9.]+)\]")


def to_ms(text: str) -> float:
    value, unit = text.split()
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def opening(md: str) -> list[str]:
    """The opening sentences of summary.md, one line per model: the bullet lines before the
    first heading or banner, a model's sub-bullets (story.SUB, one configuration each)
    joined to its line with '; '."""
    from fusionlab.analysis.report import story
    out = []
    for line in md.splitlines()[1:]:
        if line.startswith(("## ", "> ")):
            break
        if line.startswith("- **"):
            out.append(line)
        elif line.startswith(story.SUB) and out:
            sub = line[len(story.SUB):].rstrip(".")
            out[-1] = (out[-1] + " " + sub) if out[-1].endswith(":") else f"{out[-1].rstrip('.')}; {sub}"
    return out


def check_higher(a, tail: str, r: pd.Series, at, h: pd.DataFrame, where: str) -> None:
    """An opening segment's tail (story.HIGHER): the higher estimate it names is the
    configuration's highest, above the segment's variant and without its verdict; and a
    segment whose variant is not the configuration's highest names it."""
    from fusionlab.analysis.report import story
    keys = [k for k in tables.GROUP if k in h]
    same = h[(h[keys].astype(str) == h.loc[at, keys].astype(str)).all(axis=1) & (h["variant"] != "eager")
             & h["speedup"].notna()]
    found = re.search(rf"{re.escape(story.HIGHER)} (\S+) (-?[0-9.]+)x", tail)
    if same.empty:
        a.check(not found, where, f"names {found and found.group(1)} as the higher estimate; no variant of the "
                "configuration has a speedup in the record")
        return
    top = same.loc[same["speedup"].idxmax()]
    if not found:
        a.check(top["variant"] == r["variant"], where,
                f"names no higher estimate, but {top['variant']}'s {top['speedup']:.4g} is higher")
        return
    a.check(found.group(1) == top["variant"] and close(float(found.group(2)), round(top["speedup"], 2), 0, 0.0051)
            and top["verdict"] != r["verdict"] and top["speedup"] > r["speedup"], where,
            f"names {found.group(1)} {found.group(2)}x as the higher estimate; the configuration's highest is "
            f"{top['variant']} {top['speedup']:.4g} ({top['verdict']})")


def check_host_bound(a, rest: str, r: pd.Series, where: str) -> None:
    """A segment says host-bound (story.host_bound_words) exactly where the record's
    host_bound is true, GPU-bound exactly where it is false and the verdict inconclusive,
    and either quotes its kernel_speedup."""
    from fusionlab.analysis.report import story
    said = f"({story.HOST_BOUND}:" in rest
    bound = str(r.get("host_bound")) == "True"
    if "host_bound" not in r or pd.isna(r.get("kernel_speedup")):
        a.check(not said and f"({story.GPU_BOUND}:" not in rest, where,
                "says host- or GPU-bound, the record has no kernel-time speedup")
        return
    a.check(said == bound, where, f"{'says' if said else 'does not say'} host-bound, the record's host_bound is "
            f"{r.get('host_bound')}")
    gpu = f"({story.GPU_BOUND}:" in rest
    a.check(gpu == (str(r.get("host_bound")) == "False" and r.get("verdict") == "inconclusive"), where,
            f"{'says' if gpu else 'does not say'} GPU-bound with its kernel time, the record's host_bound is "
            f"{r.get('host_bound')} and its verdict {r.get('verdict')}")
    k = re.search(r"kernel time (-?[0-9.]+)x\)", rest)
    if said or gpu:
        a.check(bool(k) and close(float(k.group(1)), round(r["kernel_speedup"], 2), 0, 0.0051), where,
                f"kernel time {k.group(1) if k else '?'}x, the record's kernel_speedup {r['kernel_speedup']:.4g}")


def check_opening(a, md: str, h: pd.DataFrame) -> None:
    from fusionlab.analysis.report import story
    h = tables.with_size(h)
    names = {**{v: k for k, v in story.PARTS.items()}, **{v: k for k, v in story.CPU_PARTS.items()}}
    for line in opening(md):
        model = line[4:line.index("**", 4)]
        for seg in SEGMENT.finditer(line):
            variant = (seg.group("bold") or seg.group("var") or "").strip("*")
            where = f"summary.md {model} {variant} at {seg.group('where')}"
            batch = int(seg.group("where").split(",")[0].split()[1])
            extra = [p.strip() for p in seg.group("where").split(",")[1:]]
            d = h[(h["model"] == model) & (h["variant"] == variant) & (h["batch"] == batch)]
            for p in extra:
                if "=" in p:
                    k, _, v = p.partition("=")
                    d = d[d[k].astype(str) == v]
                else:
                    d = d[d["size"].astype(str) == p]
            a.check(len(d) == 1, where, f"{len(d)} records match this configuration")
            if len(d) != 1:
                continue
            r = d.iloc[0]
            a.check(bool(seg.group("bold")) == (r["verdict"] == "faster"), where,
                    f"{'bold, beats eager' if seg.group('bold') else 'not bold'} but the verdict is {r['verdict']!r}")
            leads = {"slower": "no variant beats eager", "inconclusive": "no variant is decisively faster",
                     "1 repeat": "no verdict from one repeat"}
            if seg.group("lead"):
                a.check(seg.group("lead") == leads.get(r["verdict"], "no verdict"), where,
                        f"says {seg.group('lead')!r} but the verdict is {r['verdict']!r}")
            a.check(close(float(seg.group("speed")), round(r["speedup"], 2), 0, 0.0051), where,
                    f"speedup {seg.group('speed')}x, the record's {r['speedup']:.4g}")
            a.check((text.HOST_SKEWED in seg.group("rest")) == text.skewed(r), where,
                    f"{'says' if text.HOST_SKEWED in seg.group('rest') else 'does not say'} {text.HOST_SKEWED}, "
                    f"the record's host_skewed is {r.get('host_skewed')}")
            check_host_bound(a, seg.group("rest"), r, where)
            check_higher(a, line[seg.end():].split("; at ")[0], r, d.index[0], h, where)
            iv = INTERVAL.search(seg.group("rest"))
            if iv:
                a.check(close(float(iv.group(1)), round(r["speedup_lo"], 2), 0, 0.0051)
                        and close(float(iv.group(2)), round(r["speedup_hi"], 2), 0, 0.0051), where,
                        f"interval [{iv.group(1)}, {iv.group(2)}], the record's "
                        f"[{r['speedup_lo']:.4g}, {r['speedup_hi']:.4g}]")
            a.check(close(to_ms(seg.group("t1")), r["wall_ms"], TEXT_REL), where,
                    f"{seg.group('t1')} per iteration, the record's {r['wall_ms']:.4g} ms")
            a.check(close(to_ms(seg.group("t2")), r["eager_wall_ms"], TEXT_REL), where,
                    f"eager's {seg.group('t2')}, the record's eager time {r['eager_wall_ms']:.4g} ms (the one its "
                    f"speedup uses)")
            if seg.group("saved"):
                saved = to_ms(seg.group("saved")) * (1 if seg.group("verb") == "saved" else -1)
                a.check(close(saved, r["saved_ms"], TEXT_REL), where,
                        f"{seg.group('saved')} {seg.group('verb')}, the record's {r['saved_ms']:.4g} ms")
            tail = line[seg.end():].split("; at ")[0]
            both = re.match(r", from parts that pull both ways \((.+?)\)", tail)
            if both:
                a.check(not (isinstance(r.get("largest_part"), str) and r.get("largest_part")), where,
                        f"parts said to pull both ways, the record names largest part {r.get('largest_part')}")
                for name, sign, value in re.findall(rf"([a-z -]+?) (saved|added) ({TIME})", both.group(1)):
                    src, _, rest = name.strip().partition(" ")
                    src, name = (src, rest) if src in ("measured", "modelled") else (None, name)
                    k = names.get(name.strip())
                    want = r.get("traffic_source") if k == "traffic_ms" and r.get("traffic_source") in (
                        "measured", "modelled") else None
                    a.check(src == want, where, f"{name.strip()} said {src or 'with no source'}, the record's "
                            f"source is {want or 'none'}")
                    v = to_ms(value) * (1 if sign == "saved" else -1)
                    a.check(k is not None and close(v, r[k], TEXT_REL, 1e-6), where,
                            f"{name.strip()} {sign} {value}, the record's {k} {r.get(k, float('nan')):.4g} ms")
            if seg.group("part"):
                part = names.get(seg.group("part").strip())
                pv = to_ms(seg.group("pv"))
                a.check(part is not None and part == r.get("largest_part") and
                        close(pv, abs(r[part]), TEXT_REL) and pv <= abs(r["saved_ms"]) * (1 + TEXT_REL), where,
                        f"largest part {seg.group('part').strip()} {seg.group('pv')}, the record's "
                        f"{r.get('largest_part')} of {r['saved_ms']:.4g} ms saved")
