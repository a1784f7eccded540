"""The test kit's pytest plugin (push_outbox.pytest_plugin), run with pytester against the real
binary: the issue's example as written, markers, fail_next and wait_delivered's message, and an
assertion helper's diff."""

from __future__ import annotations

import re

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.timeout(120)

ISSUE_EXAMPLE = """
def test_push_open_reaches_braze(outbox, fake_braze):
    outbox.save_custom_event("push_opened", properties={"step": 1}, user={"externalId": "u1"})
    outbox.wait_delivered(timeout=10)
    assert [e["name"] for e in fake_braze.events(user="u1")] == ["push_opened"]
"""


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(source)
    return pytester.runpytest_inprocess(
        "-p", "push_outbox.pytest_plugin", "-p", "no:cacheprovider", *args
    )


def test_the_issue_example_passes_as_written(pytester: pytest.Pytester) -> None:
    run(pytester, ISSUE_EXAMPLE).assert_outcomes(passed=1)


def test_markers_fix_the_clock_and_the_ids(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
import pytest

@pytest.mark.outbox(fixed_clock="2026-01-01T00:00:00Z", id_seed=7)
def test_fixed(outbox, fake_braze):
    saved = outbox.save_custom_event("a", user={"externalId": "u1"})
    outbox.wait_delivered(timeout=10)
    [event] = fake_braze.events(user="u1")
    assert event["time"] == "2026-01-01T00:00:00.000Z"
    print("ID", saved["id"])
""",
        "-s",
    )
    result.assert_outcomes(passed=1)
    first = re.findall(r"ID (\S+)", result.stdout.str())
    again = run(
        pytester,
        """
import pytest

@pytest.mark.outbox(fixed_clock="2026-01-01T00:00:00Z", id_seed=7)
def test_fixed(outbox):
    print("ID", outbox.save_custom_event("a")["id"])
""",
        "-s",
    )
    assert first and first == re.findall(r"ID (\S+)", again.stdout.str())


def test_fail_next_is_retried_and_the_requests_show_it(pytester: pytest.Pytester) -> None:
    run(
        pytester,
        """
def test_retry(outbox, fake_braze):
    fake_braze.fail_next(500)
    outbox.save_custom_event("a", user={"externalId": "u1"})
    outbox.wait_delivered(timeout=10)
    assert [r["status"] for r in fake_braze.requests] == [500, 201]
    assert [e["name"] for e in fake_braze.events()] == ["a"]
    assert fake_braze.requests[0]["headers"]["authorization"] == "Bearer ***-key"
""",
    ).assert_outcomes(passed=1)


def test_wait_delivered_says_what_is_pending_and_why(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_refused(outbox, fake_braze):
    fake_braze.fail_next(401, times=100)
    outbox.save_custom_event("a", user={"externalId": "u1"})
    outbox.wait_delivered(timeout=1)
""",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*NotDelivered: 1 item(s) still pending after 1 s*", "*configError*401*"]
    )
    result.stdout.fnmatch_lines(["*fake Braze's last answers: 401*"])


def test_an_assertion_helper_shows_a_diff_of_the_objects(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_diff(outbox, fake_braze):
    outbox.save_custom_event("push_opened", properties={"step": 1}, user={"externalId": "u1"})
    outbox.wait_delivered(timeout=10)
    fake_braze.assert_events([{"name": "push_opened", "properties": {"step": 2}}], user="u1")
""",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*events received by Braze differ from those expected (1 received, 1 expected*",
            '*-[[]0[]] {"name": "push_opened", "properties": {"step": 2}}',
            '*+[[]0[]] {"name": "push_opened", "properties": {"step": 1}}',
        ]
    )


def test_per_object_errors_are_not_counted_as_received(pytester: pytest.Pytester) -> None:
    run(
        pytester,
        """
def test_refused_object(outbox, fake_braze):
    fake_braze.fail_next(errors=[{"input_array": "events", "index": 0, "type": "scripted"}])
    outbox.save_custom_event("a", user={"externalId": "u1"})
    outbox.wait_delivered(timeout=10)
    assert fake_braze.events() == []
    assert "scripted" in str(outbox.list_dead_letters()["deadLetters"][0])
""",
    ).assert_outcomes(passed=1)


def test_an_outbox_alone_refuses_to_wait(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_alone(outbox):
    outbox.save_custom_event("a")
    outbox.wait_delivered(timeout=1)
""",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*delivers nowhere*fake_braze*"])
