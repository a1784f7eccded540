"""Clients/editors/README.md's rule list is the rule table (Sources/OutboxDomain/PayloadRules.swift):
the same codes, severities and paths, in the same order."""

from __future__ import annotations

import re

from conftest import REPO


def test_the_editors_page_lists_every_rule_of_the_table() -> None:
    source = (REPO / "Sources/OutboxDomain/PayloadRules.swift").read_text(encoding="utf-8")
    table = source[source.index("package static let table") :]
    rules = re.findall(r'code: "([^"]+)", severity: \.(\w+), path: "([^"]*)"', table)
    assert len(rules) >= 40
    page = (REPO / "Clients/editors/README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `([a-z0-9-]+)` \| (\w+) \| (?:`([^`]*)`|\(document\)) \|", page, re.M)
    assert listed == rules
