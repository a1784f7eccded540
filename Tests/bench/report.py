"""Figures (min / median / max over runs, and a ratio to a baseline of the same run), the table, the JSON."""
import json
import statistics

UNITS = {
    "req/s": lambda v: f"{v:,.0f}",
    "items/s": lambda v: f"{v:,.0f}",
    "ms": lambda v: f"{v * 1e3:,.2f}",
    "us": lambda v: f"{v * 1e6:,.1f}",
    "MB": lambda v: f"{v / 1e6:,.1f}",
    "B": lambda v: f"{v:,.0f}",
    "instr": lambda v: f"{v:,.0f}",
}


class Figure:
    """One measured quantity: its raw values, and optionally the figure it is compared to."""

    def __init__(self, label, unit, values, baseline=None, extra=None):
        self.label, self.unit, self.values = label, unit, list(values)
        self.baseline, self.extra = baseline, dict(extra or {})
        self.section = None

    @property
    def median(self):
        return statistics.median(self.values)

    @property
    def ratio(self):
        if self.baseline is None or not self.baseline.median:
            return None
        return self.median / self.baseline.median

    def cells(self):
        show = UNITS[self.unit]
        values = [show(min(self.values)), show(self.median), show(max(self.values))]
        ratio = ""
        if self.ratio is not None:
            where = "" if self.baseline.section is self.section else f" ({self.baseline.section.key})"
            ratio = f"{self.ratio:.2f}x {self.baseline.label}{where}"
        return [self.label, *values, self.unit, ratio]

    def as_json(self):
        return {
            "label": self.label, "unit": self.unit, "values": self.values,
            "min": min(self.values), "median": self.median, "max": max(self.values),
            "ratio": self.ratio, "ratio_to": self.baseline.label if self.baseline else None,
            "ratio_to_section": self.baseline.section.key if self.baseline and self.baseline.section else None,
            **self.extra,
        }


class Section:
    def __init__(self, key, title, note=""):
        self.key, self.title, self.note, self.figures = key, title, note, []

    def add(self, figure):
        figure.section = self
        self.figures.append(figure)
        return figure


def print_section(section, out):
    rows = [["", "min", "median", "max", "unit", "ratio (median / median)"]]
    rows += [figure.cells() for figure in section.figures]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print(f"\n## {section.title}", file=out)
    if section.note:
        print(section.note, file=out)
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:5], widths[1:5])] + [row[5].ljust(widths[5])]
        print("| " + " | ".join(cells) + " |", file=out)
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|", file=out)
    out.flush()


def write_json(path, meta, sections):
    doc = {"meta": meta, "sections": {s.key: {"title": s.title, "figures": [f.as_json() for f in s.figures]}
                                      for s in sections}}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
