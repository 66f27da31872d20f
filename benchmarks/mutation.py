"""Mutation score of the modules that compute what a user reads, by mutmut (configured in
pyproject.toml's [tool.mutmut]: the modules, the tests that may kill their mutants, the
pytest arguments and time limits).

    nice -n 15 python benchmarks/mutation.py MODULE[::FUNCTION] ... [--max-children N] [--limit S]
        [--tests FILE ...]   # only these test files of the selection (recorded as the record's tests)
    python benchmarks/mutation.py --list      # the modules [tool.mutmut] names

The modules run together in a copy of the checkout (its tracked and untracked files, the
work of the moment) in a temporary folder, where mutmut writes its mutants/: one `mutmut
run` of their mutants (MODULE::FUNCTION: only those of the module's function FUNCTION;
stopped after --limit seconds), then `mutmut results`. Its record goes into
benchmarks/results/mutation/scores.json (one per module, replaced on each run): the date
and commit, the count of each status, the score (killed and timed out over all, the
mutants named in EQUIVALENT left out), each surviving mutant with its diff, and the run's
time.

Over 450 lines: most of it is EQUIVALENT, the table of mutants no input tells apart, each
with its reason.
"""
from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCORES = os.path.join(ROOT, "benchmarks", "results", "mutation", "scores.json")

PKG = "fusionlab"   # mutmut names a mutant PKG.module.x_function__mutmut_N
SQ = f"{PKG}.analysis.readers.sqlite_pages"
SU = f"{PKG}.analysis.sweep.suite"
RV = f"{PKG}.analysis.report.reproduction"
AF = f"{PKG}.analysis.report.audit_figures"
NQ = f"{PKG}.analysis.readers.nsys_sqlite"
GL = f"{PKG}.analysis.sweep.gap_ledger"
GH = f"{PKG}.analysis.sweep.gap_host"
ST = f"{PKG}.analysis.sweep.stats"
SH = f"{PKG}.analysis.sweep.shares"
AT = f"{PKG}.analysis.sweep.attribution"

# mutants whose change no input can show (mutmut's name: the reason)
EQUIVALENT = {
    f"{PKG}.core.kernel_class.x_kernel_class__mutmut_1":
        'full_name\'s default "" -> "XXXX": no class pattern matches "XXXX", as none matches ""',
    f"{PKG}.core.kernel_class.x_kernel_class__mutmut_9":
        'str(full_name or "") -> str(full_name or "XXXX"): the same as above',
    f"{PKG}.core.kernel_class.x_precision__mutmut_1":
        'full_name\'s default "" -> "XXXX": no precision pattern matches "XXXX"',
    f"{PKG}.core.kernel_class.x_precision__mutmut_4":
        'str(full_name or "") -> str(full_name or "XXXX"): the same as above',
    f"{PKG}.analysis.sweep.headline.x_interval__mutmut_3":
        'pd.Series(values, dtype=float) -> dtype=None: the repeats are numbers or None; their min and max, '
        'through float(), and their count are the same in either dtype',
    f"{PKG}.analysis.sweep.headline.x_interval__mutmut_5": 'dtype=float dropped: the same as above',
    f"{PKG}.analysis.sweep.headline.x__median__mutmut_11":
        'the empty Series of a missing column, dtype float -> None: it has no values, its median is nan either way',
    f"{PKG}.analysis.sweep.headline.x__median__mutmut_13":
        '`if len(x)` -> `or True`: the median of no values is nan, as the else gives',
    f"{PKG}.analysis.sweep.headline.x__traffic__mutmut_44":
        'bandwidth = "none" where there is no bandwidth: without one neither the measured nor the modelled '
        'branch is taken, and the last branch sets bandwidth = "none" again',
    f"{PKG}.analysis.sweep.headline.x__traffic__mutmut_45": 'the same as above ("XXnoneXX")',
    f"{PKG}.analysis.sweep.headline.x__traffic__mutmut_46": 'the same as above ("NONE")',
    f"{PKG}.analysis.sweep.headline.x_best__mutmut_8":
        'groupby(dropna=False) -> dropna=None: pandas keeps the missing keys for any false value',
    f"{PKG}.analysis.sweep.headline.x_best__mutmut_12": 'sort=True dropped: True is groupby\'s default',
    f"{PKG}.analysis.sweep.headline.x_crossings__mutmut_37":
        '`"batch" if axis == "batch" else axis` -> `... and False`: both branches give the axis\'s name',
    f"{PKG}.analysis.sweep.headline.x_crossings__mutmut_42": 'the same as above (axis == "XXbatchXX")',
    f"{PKG}.analysis.sweep.headline.x_crossings__mutmut_43": 'the same as above (axis == "BATCH")',
    **{f"{PKG}.analysis.sweep.headline.x_crossings__mutmut_{n}":
       f'decisive ({what}) is read only in `not decisive and unsure`, and unsure (the values whose verdict is '
       f'neither faster nor slower) is empty exactly where every verdict is faster or slower'
       for n, what in ((85, "None"), (87, "a strict subset of faster, slower"), (88, '"XXfasterXX"'),
                       (89, '"FASTER"'), (90, '"XXslowerXX"'), (91, '"SLOWER"'),
                       (120, "`not decisive and unsure` -> `or`"))},
    f"{PKG}.analysis.sweep.headline.x_process_interval__mutmut_13":
        '`x.std(ddof=1) if n >= 2 else nan` -> `... or True`: pandas\' std with ddof=1 of fewer than 2 values is nan',
    f"{PKG}.analysis.sweep.headline.x_process_interval__mutmut_49":
        '`own if not isnan(own) else 0.0` -> `... or True`: own is nan only for one process, where the pooled '
        'spread is used, a number, and max(number, nan) is the number (nan compares false)',
    f"{PKG}.analysis.sweep.headline.x__traffic__mutmut_109":
        'traffic_bytes=np.nan -> None where there is no memory term: the headline\'s rows become a DataFrame, '
        'which holds None in a column of numbers as nan',
    f"{PKG}.analysis.sweep.headline.x__traffic__mutmut_112":
        'traffic_bytes=np.nan left out: the DataFrame fills a row\'s missing column with nan',
    **{f"{PKG}.analysis.sweep.headline.x_traffic_spread__mutmut_{n}":
       f'sp.get("bytes_removed_{side}", np.nan) -> {what}: pd.notna reads None as missing, as it reads nan'
       for n, side, what in ((3, "low", "None"), (5, "low", "no default (None)"), (9, "high", "None"),
                             (11, "high", "no default (None)"))},
    **{f"{PKG}.analysis.sweep.headline.x__speedup__mutmut_{n}":
       f'sp.get("{col}", np.nan) -> {what}: a speedups table without the column gives None, which reads as '
       f'nan in each test (pd.notna, verdict) and in the headline\'s column of numbers'
       for n, col, what in ((12, "speedup_wall", "None"), (14, "speedup_wall", "no default (None)"),
                            (23, "speedup_wall_lo", "None"), (25, "speedup_wall_lo", "no default (None)"),
                            (31, "speedup_wall_hi", "None"), (33, "speedup_wall_hi", "no default (None)"))},
    f"{PKG}.analysis.sweep.headline.x__speedup__mutmut_9":
        'the empty Series of runs without paired_speedup, dtype float -> None: no values either way',
    f"{PKG}.analysis.sweep.headline.x__side__mutmut_2":
        'median(numeric_only=True) -> None: shares.inputs\' columns are all numbers or booleans',
    f"{PKG}.analysis.sweep.headline.x__side__mutmut_4": 'numeric_only=True -> False: the same as above',
    f"{PKG}.analysis.sweep.headline.x__side__mutmut_6":
        'q["cpu"] = ... -> q["XXcpuXX"]: the medians\' own cpu column is then read, 1.0 where every run of the '
        'configuration is a CPU run and 0.0 where none is (GROUP holds device: a configuration\'s runs share it), '
        'the same through split\'s astype(bool)',
    f"{PKG}.analysis.sweep.headline.x__side__mutmut_7": 'the same as above (q["CPU"])',
    f"{PKG}.analysis.sweep.headline.x_table__mutmut_24":
        'the runs\' groupby(dropna=False) -> dropna=None: pandas keeps the missing keys for any false value',
    **{f"{PKG}.analysis.sweep.headline.x_table__mutmut_{n}":
       f'the runs\' groupby(sort=False) -> {what}: the groups go into a dict read by key; only pooled_spread '
       f'iterates it, and its sum of squares is the same up to the order of the additions (rounding)'
       for n, what in ((25, "sort=None"), (28, "sort left out (True)"), (33, "sort=True"))},
    **{f"{PKG}.analysis.sweep.headline.x_table__mutmut_{n}":
       f'the runs\' groupby(dropna=False) -> {what}: a group whose key holds a missing value (a NaN backend, '
       f'say) is never found by the speedups table\'s key either (a NaN in a tuple key matches only the same '
       f'NaN object), so it gives no numbers with or without it'
       for n, what in ((27, "dropna left out (True)"), (32, "dropna=True"))},
    f"{PKG}.analysis.sweep.headline.x_table__mutmut_50":
        'sp.to_dict("records") -> to_dict("RECORDS"): pandas reads the orient in any case',
    **{f"{PKG}.analysis.sweep.headline.x_table__mutmut_{n}":
       f'bool(r.get("host_moved", False)) -> {what}: bool() of None is False'
       for n, what in ((102, "default None"), (104, "no default (None)"))},
    **{f"{PKG}.analysis.sweep.headline.x_table__mutmut_{n}":
       f'r.get("device", "cuda") -> {what}: a speedups row always holds device (a tables.GROUP key), and '
       f'ceiling_note reads it only as == "cpu"'
       for n, what in ((195, "default None"), (197, "no default (None)"), (200, '"XXcudaXX"'), (201, '"CUDA"'))},
    f"{PKG}.analysis.sweep.headline.x_table__mutmut_228":
        'the empty Series of runs without a bound column, dtype object -> None: its mode is empty either way '
        '(traced_bound None)',
    f"{PKG}.analysis.sweep.headline.x_largest__mutmut_1":
        '`isna(total) or total == 0` -> `and`: a NaN or 0 total makes every p * total > 0 false, so no part is '
        'of its sign and ("", nan) is returned below as well',
    f"{PKG}.analysis.sweep.headline.x_largest__mutmut_9":
        'p * total > 0 -> p / total > 0: the same sign test for a total other than 0 (0 and NaN returned before)',
    **{f"{PKG}.analysis.sweep.headline.x_ceiling_note__mutmut_{n}":
       f'device\'s default "cuda" -> {what}: device is read only as == "cpu"'
       for n, what in ((1, '"XXcudaXX"'), (2, '"CUDA"'))},
    f"{PKG}.analysis.report.audit.x_check_suite__mutmut_3":
        'to_dict("records") -> to_dict("RECORDS"): pandas reads the orient in any case',
    f"{PKG}.analysis.report.audit.x_check_suite__mutmut_215":
        'md.split("## The suite", 1) -> md.split("## The suite"): [1] is the same text where the heading '
        'occurs once, as report.suite_text writes it',
    f"{PKG}.analysis.report.audit.x_check_suite__mutmut_216": 'split -> rsplit: the same, with one heading',
    f"{PKG}.analysis.report.audit.x_check_suite__mutmut_220": 'maxsplit 1 -> 2: the same, with one heading',
    f"{PKG}.analysis.report.audit.x_check_suite__mutmut_229":
        'the default line "" -> "XXXX" where the table has no row: no quote ("3.00x", "none compared") is in '
        'either, the same violation',
    f"{PKG}.analysis.report.audit.x_check_records__mutmut_15":
        'the runs\' groupby(dropna=False) -> dropna=None: pandas keeps the missing keys for any false value',
    f"{PKG}.analysis.report.audit.x_check_records__mutmut_52":
        'to_dict("records") -> to_dict("RECORDS"): pandas reads the orient in any case',
    **{f"{PKG}.analysis.report.audit.x_check_records__mutmut_{n}":
       f'measured.get(key, False) -> {what}: `both` is read only through bool() and as a condition, where None '
       f'is False'
       for n, what in ((318, "default None (the variant)"), (320, "no default (the variant)"),
                       (324, "default None (eager)"), (326, "no default (eager)"))},
    **{f"{PKG}.analysis.report.audit.x_check_records__mutmut_{n}":
       f'the rows without a speedup: variant != "eager" -> != {what}, eager\'s rows then checked too: '
       f'sweep.headline.table writes no verdict and no break-even count in an eager row (the reference, speedup '
       f'1.0; a row not run has neither), so they pass'
       for n, what in ((355, '"XXeagerXX"'), (356, '"EAGER"'))},
    f"{PKG}.analysis.report.audit.x_check_records__mutmut_360":
        'to_dict("records") -> to_dict("RECORDS"): pandas reads the orient in any case',
    **{f"{PKG}.analysis.report.audit.x_{fn}__mutmut_{n}":
       'to_dict("records") -> to_dict("RECORDS"): pandas reads the orient in any case'
       for fn, n in (("check_figure", 4), ("check_caption", 60))},
    f"{PKG}.analysis.report.audit.x_check_figure__mutmut_36":
        'a.check(False, ...) -> a.check(None, ...): Audit.check reads ok through `not ok`, None as False',
    f"{PKG}.analysis.report.audit.x_check_caption__mutmut_36":
        'BEST\'s group(3) -> group(4): the setting\'s mode and dtype are one optional group, `(?:, (\\S+) (\\S+))?`, '
        'so both are there or neither, and neither is ever empty (\\S+)',
    # report/audit_figures.py (AF: its prefix)
    **{f"{AF}.x__text__mutmut_{n}": f'a key column\'s text as {what} instead of an object array: mask compares '
       f'it with one str (==), element by element either way (an empty one gives an empty bool array)'
       for n, what in ((14, "np.array(dtype=None), a numpy str array"), (16, "np.array without dtype, a numpy str "
                                                                            "array"),
                       (21, "to_numpy(dtype=None): pandas' str column gives an object array anyway"))},
    **{f"{AF}.{name}": f'{what}: the caches only keep each table\'s key columns as _text writes them (mask); '
       f'without one each mask reads the table afresh, the same values'
       for name, what in (("x_check__mutmut_3", "caches = None"), ("x_check__mutmut_23", "check_file(..., None)"),
                          ("x_check__mutmut_28", "check_file without caches"),
                          ("x_check_file__mutmut_69", "check_marks(..., None)"),
                          ("x_check_file__mutmut_75", "check_marks without caches"),
                          ("x_check_marks__mutmut_11", "the caches without the figure's own marks -> None"),
                          ("x_check_marks__mutmut_47", "recompute(t, m, None)"),
                          ("x_check_marks__mutmut_50", "recompute without caches"))},
    f"{AF}.x_check_marks__mutmut_18": 'to_dict("records") -> to_dict("RECORDS"): pandas reads the orient in any case',
    f"{AF}.x_check_file__mutmut_19":
        'a.check(False, ...) -> a.check(None, ...): Audit.check reads ok through `not ok`, None as False',
    **{f"{AF}.x_check_file__mutmut_{n}": f'the "no data" mark\'s part of `drawn` ({what}): drawn is read only in '
       f'`len(marks) > 0 or not drawn`, and a "no data" mark is a row, so wherever the part could change drawn '
       f'the check passes on len(marks) alone'
       for n, what in ((44, '"mark" -> "XXmarkXX"'), (45, '"mark" -> "MARK"'), (49, '== "no data" -> !='),
                       (50, '"no data" -> "XXno dataXX"'), (51, '"no data" -> "NO DATA"'))},
    # readers/nsys_sqlite.py (NQ: its prefix)
    f"{NQ}.xǁReportǁ_launch_calls__mutmut_16":
        'the launch calls read CHUNK * 4 -> CHUNK * 5 rows a batch: nsys_arrow.launch_calls joins the batches into '
        'one array, the same rows in the same order',
    **{f"{NQ}.x__api__mutmut_{n}": f'the empty call table\'s "correlation" column -> {what}: it is made only '
       f'without a runtime table, and then no kernel is read against it (a kernel table without one is refused '
       f'first, NS.complete) and load keeps only API_COLUMNS'
       for n, what in ((7, '"XXcorrelationXX"'), (8, '"CORRELATION"'))},
    **{f"{NQ}.x_{fn}__mutmut_{n}": f'PRAGMA table_info of the {what} table in lower case: SQLite reads table '
       f'names in any case' for fn, n, what in (("_api", 15, "runtime"), ("_kernels", 13, "kernel"))},
    **{f"{NQ}.x__kernels__mutmut_{n}": f'the stream column selected as {what}: SQLite reads column names in any '
       f'case' for n, what in ((71, '"streamid"'), (72, '"STREAMID"'))},
    **{f"{NQ}.x_load__mutmut_{n}": f'the launch filter\'s column pick(cols, "nameId", "name") or "name" -> {what}: '
       f'_launch_api compares the column only with "nameId" (its SQL names the name column itself), so any other '
       f'value reads the same' for n, what in ((26, 'pick(cols, "nameId", None)'),
                                                                  (29, 'pick(cols, "nameId")'),
                                                                  (33, 'pick(cols, "nameId", "XXnameXX")'),
                                                                  (34, 'pick(cols, "nameId", "NAME")'),
                                                                  (35, '... or "XXnameXX"'), (36, '... or "NAME"'))},
    f"{NQ}.xǁReportǁlaunch_chunks__mutmut_14": 'calls[:, 1:4] -> [:, 1:5]: the launch calls have four columns, '
                                              'so both are columns 1 to 3',
    f"{NQ}.xǁReportǁlaunch_chunks__mutmut_30": '_stream(..., names=False) -> None: names is read only as a condition',
    f"{NQ}.xǁReportǁkernel_chunks__mutmut_27":
        'columnar and (ids or not names) -> (ids and not names): an export of name ids asked for names goes to '
        'SQLite\'s join instead of the columnar one, which give the same rows in the same order',
    **{f"{NQ}.xǁReportǁkernel_chunks__mutmut_{n}": f'{what}: SQLite reads keywords and names in any case'
       for n, what in ((42, "the kernel table's alias k. -> K."), (53, "the temporary table's SQL in lower case"),
                       (54, "the temporary table's SQL in upper case"))},
    **{f"{NQ}.xǁReportǁstrings__mutmut_{n}": f'{what}: the ids are asked for in parts only to stay under SQLite\'s '
       f'limit of variables (32,766); the parts together ask for every id, into one dict'
       for n, what in ((21, "range(0, len(ids), 500) -> step 1 (overlapping parts)"), (26, "parts of 501"))},
    f"{NQ}.xǁReportǁ_stream__mutmut_11": 'break -> return: nothing follows the loop but the finally clause, which '
                                        'runs either way',
    f"{NQ}.xǁReportǁ_stream__mutmut_26": 'np.fromiter without count: the same array, its length found as it is read',
    **{f"{NQ}.xǁReportǁ_stream__mutmut_{n}": f'{what}: numpy reads any negative dimension as the one to infer'
       for n, what in ((30, "reshape(-1, width) -> (-2, width)"), (64, "reshape(len(rows), -1) -> (len(rows), -2)"))},
    **{f"{NQ}.xǁReportǁ_stream__mutmut_{n}": f'{what}: the values are SQLite integers (times, a globalTid '
       f'coalesced to 0) or name numbers, Python ints that numpy makes int64 without the dtype too'
       for n, what in ((34, "the first five columns, dtype=None"), (36, "the first five columns, no dtype"),
                       (40, "the name numbers, dtype=None"), (42, "the name numbers, no dtype"))},
    # run/stream.py and run/fields.py
    **{f"{PKG}.analysis.run.stream.x__queries__mutmut_{n}": f'each target\'s pids twice, over (0, 1) -> {what}: '
       f'the loop reads only its length, 2' for n, what in ((9, "(1, 1)"), (10, "(0, 2)"))},
    f"{PKG}.analysis.run.stream.x__queries__mutmut_7":
        '`if len(pid)` -> `or True`: views calls _queries only with live targets, each of a range with instances, '
        'so pid is never empty',
    f"{PKG}.analysis.run.stream.xǁTargetǁoutside__mutmut_1":
        'outside\'s `or` -> `and`: never true (a chunk\'s latest call is not before its earliest), so no chunk is '
        'skipped; outside only spares the matching of chunks that match nothing',
    f"{PKG}.analysis.run.stream.xǁTargetǁtimeline__mutmut_12":
        'the kernel start clipped below at lo -> not clipped below: prev is never below lo (carry starts there and '
        'only grows), so a start before lo gives a gap below 0 (no idle) and busy from max(sc, prev) = prev alike',
    f"{PKG}.analysis.run.stream.xǁTargetǁtimeline__mutmut_47":
        'pos = gap > 0 -> >= 0: a gap of 0 adds 0 to whichever idle part it is put in',
    **{f"{PKG}.analysis.run.stream.xǁTargetǁtimeline__mutmut_{n}":
       f'the rows whose running maximum becomes the carry: {what}; numpy assigns repeated indices in order, so '
       f'each instance keeps its last row\'s value, its running maximum, as with the last row alone'
       for n, what in ((89, "last = None (every row, g[None])"),
                       (92, "g[1:] != g[:-1] -> g[:+1] (every row not of the first instance, and the last)"))},
    f"{PKG}.analysis.run.stream.xǁTargetǁaggregates__mutmut_11":
        'the tail\'s tail > 0 -> >= 0: a tail of 0 adds 0',
    f"{PKG}.analysis.run.fields.x_range_keys__mutmut_14": 'groupby(sort=True) -> sort left out: True is its default',
    **{f"{PKG}.analysis.run.fields.x_launch_configs__mutmut_{n}":
       f'groupby(sort=False) -> {what}: the groups are sorted next by sort_values over every column of the key '
       f'(full_name and the configuration), so the groups\' first order is never seen'
       for n, what in ((17, "sort=None"), (19, "sort left out"), (20, "sort=True"))},
    **{f"{PKG}.analysis.run.fields.x_launch_configs__mutmut_{n}":
       f'sort_values(kind="stable") -> {what}: pandas reads kind only when it sorts by one column; by several it '
       f'sorts lexicographically (stable) whatever kind says'
       for n, what in ((28, "kind=None"), (31, "kind left out"), (45, '"XXstableXX"'), (46, '"STABLE"'))},
    **{f"{PKG}.analysis.run.fields.x_launch_configs__mutmut_{n}":
       f'the resource frame\'s index=best.index -> {what}: its columns are Series on best.index already, which '
       f'the frame takes' for n, what in ((95, "index=None"), (97, "index left out"))},
    f"{PKG}.analysis.run.fields.x_with_resources__mutmut_7":
        'launch_configs(empty frame, {}) -> (empty frame, None): an empty frame returns before gpus is read',
    f"{PKG}.analysis.run.fields.x_with_resources__mutmut_21":
        'the occupancy column astype(float) -> astype(None): pandas reads None as float64, the map\'s dtype already',
    f"{PKG}.analysis.report.audit_match.x_close__mutmut_9":
        '`isnan(a) or isnan(b)` -> `and`: with one NaN the comparison below is False (NaN compares false), as '
        'the branch answers',
    # readers/sqlite_pages.py (SQ: its prefix)
    **{f"{SQ}.{name}": why for name, why in {
        **{f"x__layout__mutmut_{n}": f'sqlite3.connect(uri(path), uri=True) -> {what}: the SQLite Python links here '
           f'is built with SQLITE_USE_URI=1, which reads a "file:" name as a URI whatever uri= says'
           for n, what in ((3, "uri=None"), (5, "uri left out"), (7, "uri=False"))},
        "x__layout__mutmut_14": 'the schema query in lower case: SQL\'s keywords are read in any case (the string '
                                'literal \'table\' unchanged)',
        "x__payload__mutmut_3": 'the sizes as float64 (astype(None)): below 2**22, exact; only compared and added to '
                                'integer offsets',
        "x__leaves__mutmut_3": 'np.array([root], None): a Python int\'s array is int64 without the dtype',
        "x__leaves__mutmut_5": 'the same as above (the dtype left out)',
        "x__leaves__mutmut_9": 'seen as float64 zeros (dtype None): set to 1.0 and read through any(), as bool',
        "x__leaves__mutmut_11": 'the same as above (the dtype left out)',
        "x__leaves__mutmut_13": 'seen one slot longer: no level holds a page past f.pages (refused before)',
        **{f"x__leaves__mutmut_{n}": f'the message of `total > f.pages` at a level\'s start -> {what}: it never holds, '
           f'as the check before each level (total + its children > f.pages) bounds the next level\'s count'
           for n, what in ((30, "None"), (31, '"XX...XX"'), (32, "upper case"))},
        "x__leaves__mutmut_41": 'f.read(level[:2])[0] -> the first page\'s type byte either way (both pages checked '
                                'inside the file before)',
        "x__leaves__mutmut_49": 'np.arange(n, dtype=None): int64, as dtype=np.int64',
        "x__leaves__mutmut_51": 'the same as above (the dtype left out)',
        "x__leaves__mutmut_115": 'np.where(None, ...) -> each slot\'s offset read from the pointer array, the right '
                                 'child\'s too: a right child\'s offset is masked out of the bounds check (~last) and '
                                 'not used for its cell (base + 8)',
        "x__leaves__mutmut_149": 'a fifth byte of each child cell read and not used: a cell lies at most at usable - 5 '
                                 '(refused past it), its fifth byte inside the page',
        "x__value__mutmut_6": 'an empty batch\'s (lo, hi) (1, 1) -> (2, 1): the general path gives the same empty int64 '
                              'values and bool mask',
        "x__value__mutmut_7": 'the same as above ((1, 2))',
        "x__value__mutmut_36": '`lo < 8` -> `lo <= 8`: for 8 bytes the shift is 0, the values the same',
        "x__value__mutmut_37": 'the same as above (`lo < 9`)',
        "xǁ_Fileǁ__init____mutmut_32": 'a non-regular file\'s head b"" -> b"XXXX": shorter than 100 bytes either way, '
                                      '"not a regular SQLite file"',
        "xǁ_Fileǁ__init____mutmut_35": 'the page size read from a head shorter than 100 bytes too: such a file is refused '
                                      'as not a regular SQLite file before the page size is read',
        "xǁ_Fileǁ__init____mutmut_39": 'int.from_bytes without "big": big is its default (Python 3.11)',
        "xǁ_Fileǁ__init____mutmut_46": 'a short head\'s page size 0 -> 1: refused as not a regular SQLite file either way',
        "xǁ_Fileǁ__init____mutmut_95": 'ps & (ps - 1) -> ps & (ps - 2): for ps >= 512 both are 0 exactly for a power of 2 '
                                      '(2**k + 1 & 2**k - 1 is 1; past it ps - 2 keeps the top bit)',
        "xǁ_Pagesǁ_rows__mutmut_4": 'the buffer made again where it is as long as needed: the same bytes read into it',
        "xǁ_Pagesǁ_rows__mutmut_5": 'len(pages) * ps -> / ps: the buffer is made for the first batch, the largest (every '
                                    'batch but the last holds `pages` pages), and never needs to grow',
        **{f"xǁ_Pagesǁ_rows__mutmut_{n}": 'np.arange(n, dtype=None) or without dtype: int64, as dtype=np.int64'
           for n in (21, 23, 59, 61)},
        "xǁ_Pagesǁ_rows__mutmut_106": 'one-byte payload sizes as float64 (astype(None)): exact, only compared and added',
        **{f"xǁ_Pagesǁ_rows__mutmut_{n}":
           f'{what}: each rowid\'s varint length read from its own bytes instead of once per batch, the same where '
           f'each is as short as its rowid (SQLite writes no other); a longer one between two of the same length, '
           f'which the batch-wide length leaves refused, is then read as SQLite reads it: neither misreads'
           for n, what in ((128, "ends = None"), (129, "`if len(rec)` -> `and False`"),
                           (140, "the batch-wide length never used (`and False`)"))},
        "xǁ_Pagesǁ_rows__mutmut_142": 'ends[0] -> ends[1] where ends[0] == ends[1]',
        **{f"xǁ_Pagesǁlast_rowid__mutmut_{n}": f'{what}: a page without cells is only the root leaf of an empty table, '
           f'the batch\'s one page'
           for n, what in ((11, "the pages walked on to n = -1 (buf[3 - ps]: the same page, no cells)"),
                           (13, "every other page from the last"), (25, "continue -> break"))},
        "xǁ_Pagesǁlast_rowid__mutmut_56": 'range(1, 10) -> range(1, 11): the loop ends at k = 9 (break) either way',
        **{f"xǁ_Pagesǁlast_rowid__mutmut_{n}": f'{what}: only a 9-byte rowid reaches it, and rows() refuses a batch '
           f'whose last rowid is one ("a 9-byte varint") before last_rowid reads it'
           for n, what in ((61, "k == 9 -> k == 10"), (62, "the 9th byte\'s value None"), (63, "| -> &"),
                           (64, "<< 8 -> >> 8"), (65, "<< 8 -> << 9"), (66, "break -> return"),
                           (76, "the sign never taken"), (78, "- 2**64 -> + 2**64"), (79, "1 << 64 -> 1 >> 64"),
                           (80, "2 << 64"), (81, "1 << 65"), (82, ">= 2**63 -> >"), (84, ">= 2 << 63"),
                           (85, ">= 1 << 64"))},
        **{f"x__payload__mutmut_{n}": f'a 4-byte size read as 2**21 -> {what}: above usable - 35 for every page size '
           f'(at most 65536 - 35) as 2**21 is, the same refusal' for n, what in ((34, "2 << 21"), (35, "1 << 22"))},
        "xǁ_Pagesǁ__init____mutmut_1": 'several\'s default False -> True: its one caller (columns) passes it',
        "xǁ_Pagesǁ__init____mutmut_6": 'buf None -> "": `"" is None` is false, but its length 0 is short of any batch, '
                                      'so the buffer is made at the first batch either way',
    }.items()},
    # sweep/suite.py (SU: its prefix)
    **{f"{SU}.{name}": why for name, why in {
        "x_suite__mutmut_3": 'groupby(SUITE_KEYS, sort=False) -> sort=None: pandas reads any false value as False '
                             '(the groups in order of first appearance)',
        "x_suite__mutmut_92": '`len(passed) / len(every) if len(every)` -> `... or True`: a group of a groupby is '
                              'never empty',
        **{f"x_suite__mutmut_{n}": f'`ok["speedup"].{what}() if len(ok)` -> `... or True`: the {what} of no values is '
           f'nan, as the else gives' for n, what in ((118, "min"), (122, "max"))},
        "x_suite__mutmut_163": 'the empty Series of a missing column, dtype float -> None: it has no values either way, '
                               'so the median is nan',
        "x_suite__mutmut_166": '`v.median() if v.notna().any()` -> `... or True`: the median of values all missing, or '
                               'of none, is nan, as the else gives',
        **{f"x_kernel_classes__mutmut_{n}": f'the {what} groupby(dropna=False) -> dropna=None: pandas keeps the '
           f'missing keys for any false value' for n, what in ((21, "repeats\'"), (46, "classes\'"), (68, "totals\'"))},
        **{f"x_slower__mutmut_{n}": f'variant != "eager" -> != {what}: an eager row marked slower (sweep.headline '
           f'writes no verdict in one) is then compared with itself, every kernel on both sides, and adds no row'
           for n, what in ((8, '"XXeagerXX"'), (9, '"EAGER"'))},
        "x_with_class__mutmut_15": 'a missing full_name column read as "XXXX" instead of "": no class or '
                                   'precision pattern matches "XXXX", as none matches ""',
        **{f"x_with_class__mutmut_{n}": f'full.fillna("") -> fillna(None) ({what}): pandas fills an object column\'s '
           f'missing cells with None, which kernel_class and precision read as "" (str(full_name or ""))'
           for n, what in ((29, "the class"), (44, "the precision"))},
        **{f"x_with_class__mutmut_{n}": f'full.fillna("") -> fillna("XXXX") ({what}): no class or precision pattern '
           f'matches "XXXX", as none matches ""' for n, what in ((30, "the class"), (45, "the precision"))},
        **{f"x_write__mutmut_{n}": f'the empty kernels table\'s full_name column named {what}: with_class reads a '
           f'missing full_name as "" for each of its no rows, and neither table written from it holds full_name'
           for n, what in ((12, '"XXfull_nameXX"'), (13, '"FULL_NAME"'))},
        "x_write__mutmut_27": 'to_csv(index=False) -> index=None: pandas writes no index for any false value',
    }.items()},
    # sweep/decompose.py
    f"{PKG}.analysis.sweep.decompose.x__med__mutmut_10":
        '`if len(x)` -> `or True`: the median of no values is nan, as the else gives',
    f"{PKG}.analysis.sweep.decompose.x_side__mutmut_56":
        '`max(hw - prof, 0.0) if hw == hw` -> `or True`: for a NaN host wait max(nan, 0.0) is nan (0.0 > nan '
        'is false, so max keeps the first), as the else gives',
    f"{PKG}.analysis.sweep.decompose.x_breakdown__mutmut_30":
        'to_dict("records") -> to_dict("RECORDS"): pandas reads the orient in any case',
    f"{PKG}.analysis.sweep.decompose.x_breakdown_wide__mutmut_30":
        'the variants\' groupby(dropna=False) -> dropna=None: pandas keeps the missing keys for any false value',
    f"{PKG}.analysis.sweep.decompose.x_breakdown_wide__mutmut_34": 'sort=True dropped: True is groupby\'s default',
    **{f"{PKG}.analysis.sweep.decompose.x_breakdown_wide__mutmut_{n}":
       f'the speedups merge\'s on=keys + ["variant"] -> {what}: pandas merges on the columns both hold, the same '
       f'keys (the speedups columns taken, the interval, noise flag and paired speedup, are none of the wide '
       f'table\'s)' for n, what in ((147, "on=None"), (150, "on left out"))},
    **{f"{PKG}.analysis.sweep.decompose.x_wide_from_long__mutmut_{n}":
       f'merge(p, on=keys) -> {what}: pandas merges on the columns both hold, the keys (p holds the keys and the '
       f'part\'s own column, new to the wide table)' for n, what in ((36, "on=None"), (39, "on left out"))},
    # plan/restore.py
    **{f"{PKG}.plan.restore.x__killed_ncu__mutmut_{n}":
       f'a record without a reason: .get("reason", "") -> {what}: str() of it holds no "process died" either'
       for n, what in ((28, 'default None ("None")'), (30, 'no default ("None")'), (34, '"XXXX"'))},
    f"{PKG}.plan.restore.x__members__mutmut_8":
        'm.name.lstrip("/") -> rstrip("/"): slashes taken off either end only take off empty parts, and a ".." '
        'part is found either way',
    **{f"{PKG}.plan.restore.x__restore_locked__mutmut_{n}":
       f'the trash folder\'s name "replaced" -> {what}: a name of the staging folder\'s own, beside the archives\' '
       f'"0", "1", ..., removed with it' for n, what in ((58, '"XXreplacedXX"'), (59, '"REPLACED"'))},
    **{f"{PKG}.plan.restore.x__restore_locked__mutmut_{n}":
       f'the folder-in-the-way check\'s `not islink(results/rel)` -> {what}: _refuse_links, at the start, has '
       f'refused any link under runs/ and device/, so results/rel is never one and the test is always true'
       for n, what in ((103, "islink(rel) (relative to the working folder, no link)"),
                       (104, "islink(results) (its real path, no link)"))},
    **{f"{PKG}.plan.restore.x_restore__mutmut_{n}":
       f'unfinished_ncu\'s `not exists(results/d/ncu.json)` -> {what}: never true for a d reported, so the filter '
       f'leaves all in either way (a killed record is one without ncu.json; a run restored from an archive comes '
       f'whole from it, and one from two archives with different files is refused)'
       for n, what in ((80, "exists(d/ncu.json) (relative to the working folder)"),
                       (83, '"XXncu.jsonXX"'), (84, '"NCU.JSON"'))},
    f"{PKG}.plan.restore.x__same_folder__mutmut_14":
        'filecmp.cmpfiles(shallow=False) -> shallow=None: filecmp takes the stat signatures alone only where '
        'shallow is true; None reads every byte, as False',
    # report/reproduction/verdict.py and interval.py (RV: their package)
    f"{RV}.verdict.x_kendall_tau__mutmut_19":
        'pos[i] < pos[j] -> <=: the items are distinct (an ordering names each once; ordering() passes dict keys), '
        'so no two positions are equal',
    **{f"{RV}.verdict.x_{fn}__mutmut_{n}": f'float("{w}") -> float("{w.upper()}"): Python reads "{w}" in any case'
       for fn, n, w in (("kendall_tau", 33, "nan"), ("linear_fit", 26, "nan"), ("linear_fit", 53, "nan"),
                        ("loglog_slope", 12, "nan"), ("traffic", 22, "inf"))},
    **{f"{RV}.verdict.x_ordering__mutmut_{n}": f'the word of a pair that holds, "faster than" -> {what}: ordering '
       f'writes out only the pairs that do not hold' for n, what in ((78, '"XXfaster thanXX"'), (79, "upper case"))},
    **{f"{RV}.interval.x_ratio_interval__mutmut_{n}":
       f'the Welch df where va + vb is 0, len(a) + len(b) - 2 -> {what}: the half-width is t x se with se 0, '
       f'0 for any df of at least 1 (2 + 2 values give {least})'
       for n, what, least in ((44, "+ 2", "6"), (46, "- 3", "1"))},
    # runner/timing.py
    f"{PKG}.runner.timing.x_host_states__mutmut_33":
        '`paired_speedup(...) if idx else None` -> `... or True`: paired_speedup of no windows is None, as the '
        'else gives',
    f"{PKG}.runner.timing.x_time_paired_windows__mutmut_10":
        'v = e = p = None -> "": v is always timed; e and p are read only where eager_loop and probe exist, '
        'which set them',
    **{f"{PKG}.runner.timing.x_time_paired_windows__mutmut_{n}":
       f'the window order\'s "variant" -> {what}: only "eager" is compared (which == "eager"), any other name '
       f'times the variant' for n, what in ((13, '"XXvariantXX" (first)'), (14, '"VARIANT" (first)'),
                                            (23, '"XXvariantXX" (second)'), (24, '"VARIANT" (second)'))},
    f"{PKG}.runner.timing.x_time_paired_windows__mutmut_46":
        'i += 1 -> i -= 1: -k % 2 == k % 2, the same alternation of the order',
    f"{PKG}.runner.timing.xǁHostCheckǁ__init____mutmut_1":
        'windows\' default 0 -> 1: max(windows, 1) reads both as one window',
    f"{PKG}.runner.timing.x_host_states__mutmut_59":
        'abs(log(f / s)) > log1p(0.05) -> >=: no double f / s has a log equal to log1p(0.05) (the doubles either '
        'side of 1.05 give logs 1.7e-16 below and 4.2e-17 above it)',
    # sweep/gap_ledger.py and gap_host.py (GL, GH)
    f"{GH}.x_merged__mutmut_44":
        'all(c == codes[0] ...) -> codes[1]: merged reaches it with 2 records or more, and "all equal to the first" '
        'is "all equal to the second"',
    f"{GH}.x_host_costs__mutmut_56":
        'a frame\'s code default "" -> "XXXX": neither holds torch_dynamo_resume_in',
    f"{GH}.x_host_costs__mutmut_133":
        '`wrapper_each if calls else nan` -> `... or True`: wrapper_each is NaN where calls is 0',
    f"{GH}.x_host_costs__mutmut_252":
        'the first failed guard\'s default "" -> None: either is false, and no guard is written',
    **{f"{GH}.x_host_costs__mutmut_{n}":
       f'out.pop("wrapper", (0.0, "")) -> {what}: the default is never taken: skips > 0 needs a dynamo record, and '
       f'every record gives a wrapper term'
       for n, what in ((346, "default None"), (348, "no default"), (351, "(1.0, \"\")"), (352, '(0.0, "XXXX")'))},
    **{f"{GH}.x_host_costs__mutmut_{n}":
       f'`f"; {{wd}}" if wd else ""` -> {what}: the wrapper\'s detail is never empty'
       for n, what in ((361, "`wd or True`"), (362, 'else "XXXX"'))},
    f"{GL}.x_by_name__mutmut_39":
        'the repeat of a table without one, 0 -> 1: one repeat either way',
    **{f"{GL}.x_by_name__mutmut_{n}":
       f'{what}: no ATEN_NAME is in "XXXX" either, and the first row\'s full name is "XXXX" where it was ""'
       for n, what in ((46, 'full_name.fillna("") -> fillna("XXXX")'), (50, 'no full_name column: "" -> "XXXX"'))},
    f"{GL}.x_by_name__mutmut_82":
        'sort_values(kind="stable") -> kind="STABLE": numpy reads the kind in any case',
    **{f"{GL}.x_by_name__mutmut_{n}":
       f'full.get(n, "") -> {what}: every name of the table has a full name in `full` (both by the same groupby)'
       for n, what in ((116, "default None"), (118, "no default"), (119, 'default "XXXX"'))},
    f"{GL}.x_build__mutmut_5":
        '`with_size(kernels) if len(kernels) else kernels` -> `... or True`: with_size of an empty table is empty, '
        'and an empty kernels table gives every configuration no kernels either way',
    **{f"{GL}.x_build__mutmut_{n}": f'to_dict("records") -> to_dict("RECORDS") ({which}): pandas reads the orient '
       f'in any case' for n, which in ((25, "the eager rows"), (34, "the variant rows"))},
    f"{GL}.x_role__mutmut_1":
        'full_name\'s default "" -> "XXXX": neither holds at::native:: or at::cuda::',
    **{f"{GL}.x_write__mutmut_{n}":
       f'the columns of the empty kernels table where kernels.csv is missing or empty ({what}): build reads an '
       f'empty kernels table only as empty (no kernels for any configuration), whatever its columns'
       for n, what in ((6, "None"), (8, '"XXrepeatXX"'), (9, '"REPEAT"'), (10, '"XXnameXX"'), (11, '"NAME"'),
                       (12, '"XXkindXX"'), (13, '"KIND"'), (14, '"XXtime_per_iter_usXX"'),
                       (15, '"TIME_PER_ITER_US"'))},
    f"{GL}.x_write__mutmut_35":
        'residual_explained.astype(bool) -> astype(None): the total rows hold True or False, which read as 1.0 and '
        '0.0 (the same count)',
    **{f"{GL}.x_rows_of__mutmut_{n}":
       f'str(v.get("compile_mode", "")) -> {what}: where a headline row has no compile_mode, neither "" nor its '
       f'replacement holds "reduce-overhead"'
       for n, what in ((50, 'default None ("None")'), (51, 'v.get("") ("None": no row has a column "")'),
                       (52, 'no default ("None")'), (55, 'default "XXXX"'))},
    f"{GL}.x_rows_of__mutmut_194":
        'ms x (gap, or 1 where the gap is NaN) > 0 -> or 2: the same sign',
    f"{GL}.x_rows_of__mutmut_216":
        'the order\'s `rank or 99` -> `or 100`: ranks run 1 to at most 13 (the named terms), below either',
    **{f"{GL}.x_sentence__mutmut_{n}":
       f'against\'s `term not in ("total", ...)` -> {what}: the total\'s own ms x ms is never below 0'
       for n, what in ((69, '"XXtotalXX"'), (70, '"TOTAL"'))},
    f"{GL}.x_expected_causes__mutmut_23":
        '`path if isabs(path) else join(root, path)` -> `... and False` (always join): os.path.join drops root '
        'before an absolute path',
    # sweep/stats.py, shares.py, attribution.py (ST, SH, AT)
    **{f"{ST}.x_{fn}__mutmut_{n}": 'float("nan") -> float("NAN"): Python reads "nan" in any case'
       for fn, n in (("cv", 14), ("median_ci", 12), ("median_ci", 15), ("_crossover", 9), ("_crossover", 12),
                     ("_crossover", 23), ("_crossover", 26), ("_crossover", 50), ("_crossover", 81))},
    **{f"{ST}.x_{fn}__mutmut_{n}":
       f'np.asarray(repeats, dtype=float) -> {what}: the repeats are numbers (a runs table\'s column), whose '
       f'std, mean and medians are the same floats from a float, integer or object array'
       for fn, n, what in (("cv", 3, "dtype=None"), ("cv", 5, "no dtype"), ("median_ci", 4, "dtype=None"),
                           ("median_ci", 6, "no dtype"))},
    **{f"{ST}.x_ratio_ci__mutmut_{n}":
       f'np.asarray({side}, dtype=float) -> {what}: the repeats are numbers, whose medians are the same floats'
       for n, side, what in ((4, "num", "dtype=None"), (6, "num", "no dtype"), (10, "den", "dtype=None"),
                             (12, "den", "no dtype"))},
    **{f"{ST}.x_ratio_ci__mutmut_{n}": 'float("nan") -> float("NAN"): Python reads "nan" in any case'
       for n in (25, 28)},
    f"{ST}.x_ratio_ci__mutmut_14":
        '`or not len(num) or not len(den)` -> `... and not len(den)`: with one side empty and the other of 2 or '
        'more, the bootstrap\'s medians of no values are NaN, and so are both quantiles of their ratio',
    f"{ST}.x__boot_medians__mutmut_5":
        'rng.integers(0, len(x), ...) -> rng.integers(len(x), ...): numpy reads one bound as the high end from 0, '
        'the same draws from the same generator',
    **{f"{SH}.x__col__mutmut_{n}":
       f'a missing column\'s pd.Series(np.nan, index) -> {what}: pandas makes it float64 NaN as well'
       for n, what in ((10, "pd.Series(None, index)"), (12, "pd.Series(index=index)"))},
    **{f"{SH}.x_inputs__mutmut_{n}":
       f'DataFrame(..., index=runs.index) -> {what}: every column is a Series on runs.index, which the frame '
       f'takes as its index' for n, what in ((33, "index=None"), (35, "no index"))},
    **{f"{AT}.x_build__mutmut_{n}": f'rows.insert({what}): the table is reindexed to TABLE_COLUMNS at the end'
       for n, what in ((36, '1, "run" (for 0)'), (48, "2 + i, ID column (for 1 + i)"))},
    f"{AT}.x_coverage__mutmut_5": 'groupby("run", sort=True) -> sort left out: True is groupby\'s default',
    f"{AT}.x_movers_sentence__mutmut_36": 'float("nan") -> float("NAN"): Python reads "nan" in any case',
    **{f"{ST}.x_spans__mutmut_{n}":
       f'the axis name _intervals is given, "" -> {what}: spans writes only the intervals\' values, not their words'
       for n, what in ((9, "None"), (16, '"XXXX"'))},
}
KILLED = ("killed", "timeout", "segfault")   # a test failed, ran past its limit, or crashed


def config() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["tool"]["mutmut"]


def dotted(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".")


def pattern(target: str) -> str:
    """mutmut's name pattern of MODULE or MODULE::FUNCTION's mutants."""
    module, _, function = target.partition("::")
    return f"{dotted(module)}.x_{function}__mutmut_*" if function else f"{dotted(module)}.*"


def checkout_copy(dst: str) -> None:
    """The checkout's tracked and untracked (not ignored) files (tests read benchmarks/results)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split("\n")
    for rel in files:
        if rel and os.path.isfile(os.path.join(ROOT, rel)):
            os.makedirs(os.path.dirname(os.path.join(dst, rel)) or dst, exist_ok=True)
            shutil.copy2(os.path.join(ROOT, rel), os.path.join(dst, rel))


def results(work: str) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=work,
                         capture_output=True, text=True).stdout
    return dict(re.findall(r"^\s*(\S+__mutmut_\d+): (.+?)\s*$", out, re.M))


def diff(work: str, name: str) -> str:
    out = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=work, capture_output=True,
                         text=True).stdout
    return "\n".join(x for x in out.splitlines() if x[:1] in "-+" and not x.startswith(("---", "+++")))


def score(modules: list[str], max_children: int, limit: float, names: list[str] | None = None,
          tests: list[str] | None = None) -> list[dict]:
    """One `mutmut run` of the modules' mutants in a copy of the checkout (its stats pass,
    every selected test traced once, shared), stopped after `limit` seconds; a record per
    module (module doc), `complete` false where mutants were left unchecked. tests: the
    test files of the selection kept (None: all of [tool.mutmut]'s)."""
    work = tempfile.mkdtemp(prefix="mutation-")
    try:
        checkout_copy(work)
        changed = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
        head = commit() + ("+changes" if changed.strip() else "")
        with open(os.path.join(work, "pyproject.toml")) as f:   # test files this checkout lacks left out
            text = f.read()
        for t in config()["pytest_add_cli_args_test_selection"]:
            if not os.path.exists(os.path.join(work, t)) or (tests is not None and t not in tests):
                text = re.sub(rf'\s*"{re.escape(t)}",?', "", text)
        with open(os.path.join(work, "pyproject.toml"), "w") as f:
            f.write(text)
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children),
                                 *(names or map(pattern, modules))], cwd=work, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            out, _ = proc.communicate()
        seconds = time.monotonic() - t0
        everything = results(work)
        if not everything or all(v == "not checked" for v in everything.values()):
            raise SystemExit(f"mutmut run failed ({proc.returncode}):\n{out[-3000:]}")
        return [{**record(m, {k: v for k, v in everything.items() if fnmatch.fnmatch(k, pattern(m))
                              and (names is None or k in names)}, work, seconds, head),
                 **({"tests": tests} if tests is not None else {})} for m in modules]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def record(module: str, found: dict[str, str], work: str, seconds: float, head: str) -> dict:
    counts: dict[str, int] = {}
    for status in found.values():
        counts[status] = counts.get(status, 0) + 1
    # a mutant named equivalent that a test kills is not equivalent (a stale name): it counts as killed
    counted = {k: v for k, v in found.items() if v != "not checked" and (k not in EQUIVALENT or v in KILLED)}
    killed = sum(v in KILLED for v in counted.values())
    return {"module": module.partition("::")[0], "functions": module.partition("::")[2] or "all",
            "date": dt.date.today().isoformat(), "commit": head, "tool": f"mutmut {version()}",
            "mutants": len(found), "complete": "not checked" not in counts, "counts": counts,
            "equivalent": {k: EQUIVALENT[k] for k in sorted(found) if k in EQUIVALENT and found[k] not in KILLED},
            "score": round(killed / len(counted), 4) if counted else None, "run_seconds": round(seconds),
            "survivors": {k: diff(work, k) for k, v in sorted(counted.items()) if v not in KILLED},
            "statuses": {k: v for k, v in sorted(counted.items()) if v not in KILLED},
            "unchecked": sorted(k for k, v in found.items() if v == "not checked"), "_found": found}


def merge(old: dict, new: dict) -> dict:
    """A module's record with its survivors and unchecked mutants run again (`new`: theirs
    alone), EQUIVALENT as it is now."""
    eq = {**old["equivalent"], **{k: EQUIVALENT[k] for k in old["survivors"] if k in EQUIVALENT}}
    was = {**{k: "not checked" for k in old.get("unchecked", [])},
           **{k: old.get("statuses", {}).get(k, "survived") for k in old["survivors"]}}
    again = [k for k in was if k not in eq]
    statuses = {k: new["_found"].get(k, was[k]) for k in again}
    counts = dict(old["counts"])
    for k in again:   # each mutant's old status out, its new one in
        counts[was[k]] = counts.get(was[k], 0) - 1
        counts[statuses[k]] = counts.get(statuses[k], 0) + 1
    counts = {k: v for k, v in counts.items() if v}
    left = {k: new["survivors"].get(k) or old["survivors"].get(k, "") for k in again
            if statuses[k] not in KILLED and statuses[k] != "not checked"}
    n = sum(counts.values()) - len(eq) - counts.get("not checked", 0)
    killed = sum(v for k, v in counts.items() if k in KILLED)
    return {**old, "counts": counts, "equivalent": eq, "score": round(killed / n, 4) if n else None,
            "complete": "not checked" not in counts, "survivors": left, "statuses": {k: statuses[k] for k in left},
            "unchecked": sorted(k for k in again if statuses[k] == "not checked"),
            "again": {"date": new["date"], "commit": new["commit"], "run_seconds": new["run_seconds"],
                      "killed": sum(statuses[k] in KILLED for k in again),
                      **({"tests": new["tests"]} if "tests" in new else {})}}


def rescore(old: dict) -> dict:
    """A module's record with EQUIVALENT as it is now."""
    eq = {**old["equivalent"], **{k: EQUIVALENT[k] for k in old["survivors"] if k in EQUIVALENT}}
    n = sum(old["counts"].values()) - len(eq) - old["counts"].get("not checked", 0)
    killed = sum(v for k, v in old["counts"].items() if k in KILLED)
    left = {k: v for k, v in old["survivors"].items() if k not in eq}
    return {**old, "equivalent": eq, "score": round(killed / n, 4) if n else None, "survivors": left,
            "statuses": {k: v for k, v in old.get("statuses", {}).items() if k in left}}


def commit() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def version() -> str:
    from importlib.metadata import version as v
    return v("mutmut")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("modules", nargs="*")
    p.add_argument("--list", action="store_true", help="the modules pyproject.toml's [tool.mutmut] names")
    p.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    p.add_argument("--again", action="store_true", help="run the survivors and the unchecked mutants of the "
                   "modules' records again (after new tests, or after a run stopped by --limit) and merge their "
                   "statuses")
    p.add_argument("--rescore", action="store_true", help="apply EQUIVALENT to the modules' records, run nothing")
    p.add_argument("--limit", type=float, default=4 * 3600, help="stop mutmut after this many seconds")
    p.add_argument("--tests", nargs="+", metavar="FILE", help="only these test files of [tool.mutmut]'s selection "
                   "(the modules' own tests: a shorter stats pass; a mutant only another file kills survives)")
    a = p.parse_args(argv)
    known = config()["only_mutate"]
    if a.list or not a.modules:
        print("\n".join(known))
        return 0
    os.makedirs(os.path.dirname(SCORES), exist_ok=True)
    unknown = [m for m in a.modules if m.partition("::")[0] not in known]
    if unknown:
        p.error(f"{unknown[0]} is not in [tool.mutmut] only_mutate")
    stray = [t for t in a.tests or [] if t not in config()["pytest_add_cli_args_test_selection"]]
    if stray:
        p.error(f"{stray[0]} is not in [tool.mutmut] pytest_add_cli_args_test_selection")
    def load() -> dict:
        return json.load(open(SCORES)) if os.path.exists(SCORES) else {}
    scores = load()
    if a.rescore:   # EQUIVALENT as it is now applied to the records, nothing run
        recs = [rescore(scores[m]) for m in a.modules]
    elif a.again:   # the survivors and unchecked mutants of each module's record, their new statuses merged in
        names = [k for m in a.modules for k in [*scores[m]["survivors"], *scores[m].get("unchecked", [])]
                 if k not in EQUIVALENT]
        recs = [merge(scores[m], r) for m, r in zip(a.modules, score(a.modules, a.max_children, a.limit, names,
                                                                               a.tests))]
    else:
        recs = score(a.modules, a.max_children, a.limit, tests=a.tests)
    scores = load()   # as it is now, after the run
    scores.update({m: {k: v for k, v in r.items() if k != "_found"} for m, r in zip(a.modules, recs)})
    with open(SCORES, "w") as f:
        json.dump(dict(sorted(scores.items())), f, indent=1)
        f.write("\n")
    for rec in recs:
        print(json.dumps({k: rec[k] for k in ("module", "mutants", "complete", "counts", "score")}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
