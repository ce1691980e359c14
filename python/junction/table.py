"""qdstat-style output: aligned tables, CSV and JSON.

The classic layout, as qdstat 1.19 prints it: the title on its own line;
then, when there are rows, a heading line, a line of '=' and one line per
row, each starting with two spaces. Every column is as wide as its widest
cell or heading plus two spaces, text is left-aligned, and the last column is
not padded (so no line ends in blanks). A table without rows prints only its
title.

CSV (the standard csv module): the heading row first, then one row per
entry, every field quoted; the title line only when asked for (--title),
so the output is CSV a program can read.

A view builds Table objects holding raw cells (numbers stay numbers, None
where there is nothing); each column may carry a formatter applied for the
classic and CSV forms, and a cell whose text is not a plain rendering of its
value (an uptime as DDD:HH:MM:SS, a size in KiB) is a Shown(raw, text). JSON
keeps the raw values: seconds, octets, counts and ids as numbers.
"""

import csv
import io
import json

PREFIX = "  "
SPACING = 2


class Shown:
    """A cell shown as `text` in tables and CSV, kept as `raw` in JSON."""

    def __init__(self, raw, text):
        self.raw = raw
        self.text = text

    def __str__(self):
        return self.text


def number_id(value):
    """An id that is a decimal number (a connection's or link's identity):
    the number in JSON, the text in tables."""
    if isinstance(value, str) and value.isdigit():
        return Shown(int(value), value)
    return value


def plain(value):
    """A cell as text: None is empty, an integer its digits (proton's typed
    integers, e.g. ulong, would otherwise print as 'ulong(5)'), everything
    else str()."""
    if value is None:
        return ""
    if isinstance(value, Shown):
        return value.text
    if isinstance(value, int) and not isinstance(value, bool):
        return "%d" % value
    return str(value)


def time_long(seconds):
    """Seconds as DDD:HH:MM:SS (qdstat's uptime and last-delivery form)."""
    if seconds is None:
        return ""
    s = int(seconds)
    return "%03d:%02d:%02d:%02d" % (s // 86400, s % 86400 // 3600, s % 3600 // 60, s % 60)


def time_short(seconds):
    """Seconds as HH:MM:SS within a day (qdstat's link 'blkd' column)."""
    s = int(seconds) % 86400
    return "%02d:%02d:%02d" % (s // 3600, s % 3600 // 60, s % 60)


def num_kmg(value, base=1000):
    """A count with a unit suffix once it reaches `base` (1024: KiB, MiB...)."""
    if value is None:
        return ""
    suffixes = ("KiB", "MiB", "GiB", "TiB", "PiB") if base == 1024 else ("k", "m", "g", "t", "p")
    if value < base:
        return "%d" % value
    v = float(value)
    for i, suffix in enumerate(suffixes):
        v /= base
        if v < base or i == len(suffixes) - 1:
            break
    if v < 10.0:
        return "%.2f %s" % (v, suffix)
    if v < 100.0:
        return "%.1f %s" % (v, suffix)
    return "%.0f %s" % (v, suffix)


def kib(value):
    return num_kmg(value, 1024) if isinstance(value, int) else plain(value)


def commas(value):
    """An integer with thousands separators."""
    if value is None:
        return ""
    try:
        return "{:,}".format(int(value))
    except (TypeError, ValueError):
        return plain(value)


class Column:
    def __init__(self, heading, fmt=plain):
        self.heading = heading
        self.fmt = fmt


class Table:
    """A titled table: columns and rows of raw cells."""

    def __init__(self, title, columns, rows=None, json_title=None):
        self.title = title
        self.columns = [c if isinstance(c, Column) else Column(c) for c in columns]
        self.rows = [list(r) for r in (rows or [])]
        self.json_title = json_title or title.strip()

    @property
    def headings(self):
        return [c.heading for c in self.columns]

    def text_rows(self):
        out = []
        for row in self.rows:
            row = list(row) + [None] * (len(self.columns) - len(row))
            out.append([("" if v is None else v.text if isinstance(v, Shown) else c.fmt(v))
                        for c, v in zip(self.columns, row)])
        return out

    def sort_by(self, heading):
        """Sort rows by one column's text (qdstat sorts some views)."""
        i = self.headings.index(heading)
        self.rows.sort(key=lambda r: plain(r[i]) if i < len(r) else "")


def render_classic(table):
    lines = [table.title]
    rows = table.text_rows()
    if not rows:
        return lines
    heads = table.headings
    widths = []
    for i, h in enumerate(heads):
        widths.append(max([len(h)] + [len(r[i]) for r in rows]) + SPACING)

    def line(cells):
        parts = []
        for i, text in enumerate(cells):
            parts.append(text if i == len(cells) - 1 else text.ljust(widths[i]))
        return PREFIX + "".join(parts)

    lines.append(line(heads))
    lines.append(PREFIX + "=" * sum(widths))
    lines.extend(line(r) for r in rows)
    return lines


def render_csv(table, title=False, lead=()):
    """The table as CSV lines (csv module, every field quoted): the heading
    row, then the rows (the heading row also when there are none, so a
    reader still learns the columns). title: the title line(s) first.
    lead: (heading, value) pairs put before every row, e.g. ("router", "A")
    for --all-routers."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow([h for h, _ in lead] + table.headings)
    for r in table.text_rows():
        writer.writerow([v for _, v in lead] + r)
    lines = table.title.strip("\n").splitlines() if title else []
    return lines + out.getvalue().rstrip("\n").split("\n")


def _jsonable(value):
    if isinstance(value, Shown):
        return _jsonable(value.raw)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


def table_json(table):
    """A table as a JSON-ready dict: title, columns, rows of raw cells."""
    return {"title": table.json_title, "columns": table.headings,
            "rows": [_jsonable(list(r) + [None] * (len(table.columns) - len(r)))
                     for r in table.rows]}


def dumps(obj):
    return json.dumps(_jsonable(obj), indent=2)
