"""qdstat-style output: aligned tables, CSV and JSON.

The classic layout, as qdstat 1.19 prints it: the title on its own line;
then, when there are rows, a heading line, a line of '=' and one line per
row, each starting with two spaces. Every column is as wide as its widest
cell or heading plus two spaces, text is left-aligned, and the last column is
not padded (so no line ends in blanks). A table without rows prints only its
title.

CSV: the title line, then headings and rows as comma-separated fields, each
non-empty field in double quotes (quotes doubled), an empty field empty.

A view builds Table objects holding raw cells (numbers stay numbers, None
where there is nothing); each column may carry a formatter applied for the
classic and CSV forms. JSON keeps the raw cells.
"""

import json

PREFIX = "  "
SPACING = 2


def plain(value):
    """A cell as text: None is empty, an integer its digits (proton's typed
    integers, e.g. ulong, would otherwise print as 'ulong(5)'), everything
    else str()."""
    if value is None:
        return ""
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
            out.append([c.fmt(v) if v is not None else "" for c, v in zip(self.columns, row)])
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


def _csv_field(text):
    if text == "":
        return ""
    return '"' + text.replace('"', '""') + '"'


def render_csv(table):
    lines = [table.title]
    rows = table.text_rows()
    if not rows:
        return lines
    lines.append(",".join(_csv_field(h) for h in table.headings))
    lines.extend(",".join(_csv_field(c) for c in r) for r in rows)
    return lines


def _jsonable(value):
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
