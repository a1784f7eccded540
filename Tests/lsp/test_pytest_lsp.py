"""`push-outbox lsp` end to end through pytest-lsp (a pygls client over real pipes): diagnostics
pushed and pulled with exact ranges, hover, completion, a quick fix applied and re-checked, and
incremental edits, each in both position encodings (UTF-16, LSP's default, and UTF-8 when offered)."""

from __future__ import annotations

import sys

import pytest
import pytest_lsp
from conftest import find_binary, utf8_column, utf16_column
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

BINARY = find_binary()
if BINARY is None:  # pragma: no cover - a checkout without a build
    pytest.skip("push-outbox binary not found: run `swift build`", allow_module_level=True)

URI = "file:///work/payloads/welcome.apns"
# The error on line 2 comes after a 2-byte (é) and an astral (😀: 4 bytes, 2 UTF-16 units) character.
LINES = [
    "{",
    '  "aps": {"alert": "Café 😀", "badge": "3", "interruption-level": "urgent"},',
    '  "ab": {"att": {"url": "https://x.example/a.jpg", "type": "jpg"}}',
    "}",
]
TEXT = "\n".join(LINES) + "\n"


def column(encoding: str, line: str, index: int) -> int:
    return utf8_column(line, index) if encoding == "utf-8" else utf16_column(line, index)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[str(BINARY), "lsp"]), params=["utf-16", "utf-8"]
)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    capabilities = client_capabilities("visual-studio-code")
    encodings = ["utf-8", "utf-16"] if request.param == "utf-8" else ["utf-16"]
    capabilities.general = types.GeneralClientCapabilities(
        position_encodings=[types.PositionEncodingKind(e) for e in encodings]
    )
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities, initialization_options={"diagnostics": "both"}
        )
    )
    lsp_client.encoding = result.capabilities.position_encoding  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def open_document(client: LanguageClient, text: str = TEXT, uri: str = URI) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="json", version=1, text=text)
        )
    )


async def diagnostics(client: LanguageClient, uri: str = URI) -> list[types.Diagnostic]:
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics[uri])


async def test_the_server_negotiates_the_encoding_the_client_offers(client: LanguageClient):
    assert client.encoding in ("utf-16", "utf-8")  # type: ignore[attr-defined]


async def test_diagnostics_are_pushed_with_exact_ranges_codes_and_links(client: LanguageClient):
    encoding = client.encoding  # type: ignore[attr-defined]
    open_document(client)
    found = {d.code: d for d in await diagnostics(client)}
    assert set(found) == {
        "badge-type",
        "interruption-level-value",
        "attachment-needs-mutable-content",
    }
    line = LINES[1]
    badge = found["badge-type"]
    start = line.index('"3"')
    assert badge.range == types.Range(
        start=types.Position(line=1, character=column(encoding, line, start)),
        end=types.Position(line=1, character=column(encoding, line, start + 3)),
    )
    assert badge.severity == types.DiagnosticSeverity.Error
    assert badge.code_description is not None
    assert badge.code_description.href.startswith("https://developer.apple.com/")
    assert badge.source == "push-outbox"


async def test_pull_diagnostics_give_the_same_report(client: LanguageClient):
    open_document(client)
    pushed = await diagnostics(client)
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=URI))
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    assert [(d.code, d.range) for d in report.items] == [(d.code, d.range) for d in pushed]


async def test_hover_explains_a_key_with_its_rules(client: LanguageClient):
    encoding = client.encoding  # type: ignore[attr-defined]
    open_document(client)
    line = LINES[1]
    at = column(encoding, line, line.index("interruption-level") + 3)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            position=types.Position(line=1, character=at),
        )
    )
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert "time-sensitive" in hover.contents.value
    assert "interruption-level-value" in hover.contents.value


async def test_completion_offers_missing_keys_and_enum_values(client: LanguageClient):
    encoding = client.encoding  # type: ignore[attr-defined]
    text = '{"aps": {"badge": 1, "}}\n'
    open_document(client, text)
    at = column(encoding, text, text.index(', "') + 3)
    items = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            position=types.Position(line=0, character=at),
        )
    )
    assert isinstance(items, list)
    labels = [i.label for i in items]
    assert "mutable-content" in labels and "interruption-level" in labels
    assert "badge" not in labels, "a key already present is not offered again"
    text = '{"aps": {"interruption-level": "}}\n'
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    at = column(encoding, text, text.index(': "') + 3)
    values = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            position=types.Position(line=0, character=at),
        )
    )
    assert isinstance(values, list)
    assert [v.label for v in values] == ['"passive"', '"active"', '"time-sensitive"', '"critical"']


async def test_quick_fixes_repair_and_the_repair_is_checked_again(client: LanguageClient):
    open_document(client)
    found = await diagnostics(client)
    everything = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=4, character=0)
    )
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            range=everything,
            context=types.CodeActionContext(diagnostics=found),
        )
    )
    assert actions is not None
    titles = sorted(a.title for a in actions if isinstance(a, types.CodeAction))
    assert titles == ['Add "mutable-content": 1 to aps', "Write the badge as the number 3"]
    # Apply every edit as incremental changes, from the last, as an editor would.
    edits = [
        e
        for a in actions
        if isinstance(a, types.CodeAction) and a.edit and a.edit.changes
        for e in a.edit.changes[URI]
    ]
    edits.sort(key=lambda e: (e.range.start.line, e.range.start.character), reverse=True)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                for e in edits
            ],
        )
    )
    after = await diagnostics(client)
    assert [d.code for d in after] == ["interruption-level-value"]


async def test_incremental_edits_keep_diagnostics_current(client: LanguageClient):
    encoding = client.encoding  # type: ignore[attr-defined]
    open_document(client)
    await diagnostics(client)
    line = LINES[1]
    start = line.index('"urgent"')
    end = start + len('"urgent"')
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line=1, character=column(encoding, line, start)),
                        end=types.Position(line=1, character=column(encoding, line, end)),
                    ),
                    text='"time-sensitive"',
                )
            ],
        )
    )
    codes = [d.code for d in await diagnostics(client)]
    assert "interruption-level-value" not in codes
    assert "badge-type" in codes


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
