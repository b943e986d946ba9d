"""Parsing Confluence storage format into elements: each element and macro kind, tables, linearizers, fuzz."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.core.ingest.extract import PageParseError, extract_evidence
from threadwise.core.ingest.linearize import LINEARIZERS
from threadwise.core.ingest.storage_format import parse_storage_format
from threadwise.core.types import Element, Page


def kinds(elements: list[Element]) -> list[str]:
    return [e.kind for e in elements]


def only_text(body: str) -> str:
    """The text of a body that parses into exactly one element."""
    elements = parse_storage_format(body)
    assert len(elements) == 1, elements
    return elements[0].text


def macro(name: str, params: dict[str, str] | None = None, body: str = "", plain: str | None = None) -> str:
    parameters = "".join(f'<ac:parameter ac:name="{k}">{v}</ac:parameter>' for k, v in (params or {}).items())
    content = f"<ac:rich-text-body>{body}</ac:rich-text-body>" if body else ""
    if plain is not None:
        content = f"<ac:plain-text-body><![CDATA[{plain}]]></ac:plain-text-body>"
    return f'<ac:structured-macro ac:name="{name}" ac:schema-version="1">{parameters}{content}</ac:structured-macro>'


# ---- passages, headings, lists ----------------------------------------------------------------------------


def test_text_between_headings_is_a_passage_with_its_heading_path() -> None:
    body = (
        "<p>Intro.</p><h2>Scope</h2><p>First.</p><p>Second.</p><h3>Details</h3><p>Deep.</p>"
        "<h2><span>Results</span></h2><h4>Legacy</h4><p>Old.</p><h3>UEFI</h3><p>New.</p><h2> </h2><p>Same.</p>"
    )
    elements = parse_storage_format(body)
    assert [(e.kind, e.heading, e.text) for e in elements] == [
        ("passage", "", "Intro."),
        ("passage", "Scope", "First.\n\nSecond."),
        ("passage", "Scope > Details", "Deep."),
        ("passage", "Results > Legacy", "Old."),
        ("passage", "Results > UEFI", "New."),
        ("passage", "Results > UEFI", "Same."),  # an empty heading changes nothing
    ]


def test_links_and_emphasis_leave_plain_readable_text() -> None:
    body = '<p>See <a href="https://x.example/a">the <strong>release</strong> notes</a> and <em>then</em> <code>make run</code>.</p>'
    assert only_text(body) == "See the release notes and then make run."


def test_a_list_or_table_interrupts_a_passage() -> None:
    body = "<h2>Plan</h2><p>Before.</p><ul><li>one</li></ul><p>After.</p>"
    elements = parse_storage_format(body)
    assert [(e.kind, e.text) for e in elements] == [
        ("passage", "Before."),
        ("list", "- one"),
        ("passage", "After."),
    ]
    assert {e.heading for e in elements} == {"Plan"}


def test_a_long_passage_is_split_at_paragraph_boundaries() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 40 for i in range(10)]  # ~220 chars each
    elements = parse_storage_format("".join(f"<p>{p}</p>" for p in paragraphs), max_chars=500)
    assert kinds(elements) == ["passage"] * 5
    assert all(len(e.text) <= 500 for e in elements)
    assert elements[0].text.startswith("Paragraph 0") and "Paragraph 1" in elements[0].text
    assert " ".join(e.text for e in elements).split() == " ".join(paragraphs).split()


def test_a_single_overlong_paragraph_is_split_at_sentences() -> None:
    text = " ".join(f"Sentence number {i} says something." for i in range(100))
    elements = parse_storage_format(f"<p>{text}</p>", max_chars=300)
    assert len(elements) > 5
    assert all(len(e.text) <= 300 and e.text.endswith(".") for e in elements)


def test_nested_lists_are_one_indented_list() -> None:
    body = "<ol><li>Boot<ul><li>press F12</li><li>pick USB</li></ul></li><li>Install</li></ol>"
    assert only_text(body) == "1. Boot\n   - press F12\n   - pick USB\n2. Install"


def test_an_overlong_list_is_split_between_top_level_items() -> None:
    items = "".join(f"<li>Item {i} {'x' * 80}<ul><li>sub {i}</li></ul></li>" for i in range(20))
    elements = parse_storage_format(f"<ul>{items}</ul>", max_chars=400)
    assert set(kinds(elements)) == {"list"} and len(elements) > 3
    for element in elements:
        assert element.text.startswith("- Item ") and len(element.text) <= 400
    assert all(f"sub {i}" in "".join(e.text for e in elements) for i in range(20))


def test_task_list_items_show_their_state() -> None:
    body = (
        "<ac:task-list>"
        "<ac:task><ac:task-id>1</ac:task-id><ac:task-status>complete</ac:task-status>"
        "<ac:task-body>Send notes</ac:task-body></ac:task>"
        "<ac:task><ac:task-id>2</ac:task-id><ac:task-status>incomplete</ac:task-status>"
        '<ac:task-body><ac:link><ri:user ri:username="alice" /></ac:link> book a room</ac:task-body></ac:task>'
        "</ac:task-list>"
    )
    assert only_text(body) == "- [x] Send notes\n- [ ] @alice book a room"


def test_list_inside_a_layout_and_panel_is_still_a_top_level_list() -> None:
    body = (
        "<ac:layout><ac:layout-section><ac:layout-cell><h2>Steps</h2>"
        + macro("info", body="<p>Read first.</p><ul><li>a</li><li>b</li></ul>")
        + "</ac:layout-cell></ac:layout-section></ac:layout>"
    )
    elements = parse_storage_format(body)
    assert [(e.kind, e.heading, e.text) for e in elements] == [
        ("passage", "Steps", "Info: Read first."),
        ("list", "Steps", "- a\n- b"),
    ]


# ---- macros ----------------------------------------------------------------------------------------------


def test_code_block_keeps_its_verbatim_text() -> None:
    body = "<p>Run:</p>" + macro("code", {"language": "bash"}, plain="make run && echo '<ok>'\nmake test")
    assert only_text(body) == "Run:\n\n```\nmake run && echo '<ok>'\nmake test\n```"


@pytest.mark.parametrize(
    ("name", "label"), [("info", "Info"), ("note", "Note"), ("warning", "Warning"), ("tip", "Tip")]
)
def test_panels_keep_their_body_and_say_their_kind(name: str, label: str) -> None:
    assert (
        only_text(macro(name, body="<p>Never deploy on Fridays.</p>")) == f"{label}: Never deploy on Fridays."
    )


def test_panel_and_expand_titles_are_kept() -> None:
    assert only_text(macro("panel", {"title": "Contacts"}, "<p>Ask Dana.</p>")) == "Contacts\n\nAsk Dana."
    assert (
        only_text(macro("expand", {"title": "Troubleshooting"}, "<p>Retry.</p>"))
        == "Troubleshooting\n\nRetry."
    )
    assert only_text(macro("warning", {"title": "Careful"}, "<p>Hot.</p>")) == "Warning: Careful\n\nHot."


def test_status_lozenge_jira_key_and_date_become_text() -> None:
    body = (
        "<p>State: "
        + macro("status", {"colour": "Green", "title": "DONE"})
        + " in "
        + macro("jira", {"server": "JIRA", "key": "OXT-239"})
        + ' since <time datetime="2024-10-14" />.</p>'
    )
    assert only_text(body) == "State: DONE in OXT-239 since 2024-10-14."


def test_user_mentions_are_readable() -> None:
    body = (
        '<p><ac:link><ri:user ri:account-id="557058:f58131cb-b67d-43c7-b30d-6b58d40bd077" /></ac:link>, '
        '<ac:link><ri:user ri:userkey="ff80808149733c610149804656d70002" /></ac:link>, '
        '<ac:link><ri:user ri:username="bob" /></ac:link>, '
        '<ac:link><ri:user ri:account-id="42" /><ac:plain-text-link-body><![CDATA[Carol]]></ac:plain-text-link-body>'
        "</ac:link></p>"
    )
    assert only_text(body) == "@user-0bd077, @user-d70002, @bob, Carol"
    named = parse_storage_format(body, user_names={"ff80808149733c610149804656d70002": "Alice Weber"})
    assert named[0].text == "@user-0bd077, @Alice Weber, @bob, Carol"


def test_page_links_show_their_body_or_the_page_title() -> None:
    body = (
        '<p><ac:link><ri:page ri:content-title="Getting Started" ri:space-key="OD" /></ac:link> and '
        '<ac:link><ri:page ri:content-title="Gov2" /><ac:plain-text-link-body><![CDATA[Platform Properties]]>'
        "</ac:plain-text-link-body></ac:link> and "
        '<ac:link><ri:attachment ri:filename="plan.pdf" /></ac:link> and '
        '<ac:link><ri:page ri:content-title="Next step" /><ac:link-body><ac:image><ri:attachment ri:filename="n.png" />'
        "</ac:image></ac:link-body></ac:link></p>"
    )
    assert only_text(body) == "Getting Started and Platform Properties and plan.pdf and Next step"


def test_macros_without_text_are_dropped() -> None:
    body = (
        macro("toc", {"maxLevel": "2"})
        + macro("children", {"all": "true"})
        + macro("attachments")
        + macro("anchor", {"": "top"})
        + '<p><ac:image><ri:attachment ri:filename="logo.png" /></ac:image>Text'
        + '<ac:emoticon ac:name="smile" /></p>'
        + macro("jira", {"jqlQuery": "project = OXT"})
        + '<p><ac:image ac:alt="Architecture diagram"><ri:attachment ri:filename="a.png" /></ac:image></p>'
    )
    assert only_text(body) == "Text\n\nArchitecture diagram"


def test_tick_emoticon_and_decision_lists() -> None:
    body = (
        '<p><ac:emoticon ac:name="tick" /> Ready</p><ac:adf-extension><ac:adf-node type="decision-list">'
        '<ac:adf-attribute key="local-id">x</ac:adf-attribute><ac:adf-node type="decision-item">'
        '<ac:adf-attribute key="state">DECIDED</ac:adf-attribute><ac:adf-content>Use Zoom</ac:adf-content>'
        "</ac:adf-node></ac:adf-node><ac:adf-fallback><p>Use Zoom</p></ac:adf-fallback></ac:adf-extension>"
    )
    assert [e.text for e in parse_storage_format(body)] == ["✓ Ready", "- Decision: Use Zoom"]


def test_unknown_macros_keep_their_body_text() -> None:
    body = macro("details", body="<p>Owner: Dana</p>") + macro("noformat", plain="raw  text")
    assert only_text(body) == "Owner: Dana\n\n```\nraw  text\n```"


# ---- tables ----------------------------------------------------------------------------------------------

ACTION_ITEMS = (
    "<h2>Action items</h2><table><tbody>"
    "<tr><th>Member</th><th>Task</th><th>Due</th></tr>"
    "<tr><td>Bob</td><td>Rerun the upgrade test</td><td>Oct 16</td></tr>"
    "<tr><td>Alice</td><td>Similarity function</td><td></td></tr>"
    "</tbody></table>"
)


def test_table_gives_the_whole_table_then_one_verbalized_row_each() -> None:
    elements = parse_storage_format(ACTION_ITEMS)
    assert kinds(elements) == ["table", "row", "row"]
    table, bob, alice = elements
    assert alice.text == "Row 2 in Table 1: Member is Alice, and Task is Similarity function"
    assert alice.cells == (("Member", "Alice"), ("Task", "Similarity function"))
    assert (alice.table_no, alice.row_no, alice.heading) == (1, 2, "Action items")
    assert (
        bob.text == "Row 1 in Table 1: Member is Bob, and Task is Rerun the upgrade test, and Due is Oct 16"
    )
    assert table.text == bob.text + "\n" + alice.text
    assert (table.table_no, table.row_no) == (1, None)


def test_tables_are_numbered_in_page_order() -> None:
    elements = parse_storage_format(ACTION_ITEMS + "<p>x</p>" + ACTION_ITEMS)
    assert [e.table_no for e in elements if e.kind == "table"] == [1, 2]
    assert elements[-1].text.startswith("Row 2 in Table 2: Member is Alice")


def test_without_th_the_first_row_is_the_header() -> None:
    body = "<table><tr><td>Name</td><td>Role</td></tr><tr><td>Dana</td><td>Lead</td></tr></table>"
    assert parse_storage_format(body)[1].text == "Row 1 in Table 1: Name is Dana, and Role is Lead"


def test_colspan_and_rowspan_are_expanded_and_multi_row_headers_joined() -> None:
    body = (
        "<table><tbody>"
        '<tr><th rowspan="2">Model</th><th colspan="2">Result</th></tr>'
        "<tr><th>Install</th><th>Upgrade</th></tr>"
        '<tr><td rowspan="2">T14</td><td>PASS</td><td>FAIL</td></tr>'
        '<tr><td colspan="2">N/A</td></tr>'
        '<tr><td colspan="3">Desktop models</td></tr>'
        "<tr><td>OptiPlex</td><td>PASS</td><td>PASS</td></tr>"
        "</tbody></table>"
    )
    rows = [e for e in parse_storage_format(body) if e.kind == "row"]
    assert [r.text for r in rows] == [
        "Row 1 in Table 1: Model is T14, and Result / Install is PASS, and Result / Upgrade is FAIL",
        "Row 2 in Table 1: Model is T14, and Result / Install is N/A, and Result / Upgrade is N/A",
        "Row 3 in Table 1: Desktop models",
        "Row 4 in Table 1: Model is OptiPlex, and Result / Install is PASS, and Result / Upgrade is PASS",
    ]


def test_row_header_table_uses_the_first_column_as_labels() -> None:
    body = (
        "<table><tr><th>Team lead</th><td>Dana Kovac</td></tr>"
        "<tr><th>Phone</th><td>+49 30 1234</td><td>(office)</td></tr></table>"
    )
    rows = [e for e in parse_storage_format(body) if e.kind == "row"]
    assert [r.text for r in rows] == [
        "Row 1 in Table 1: Team lead is Dana Kovac",
        "Row 2 in Table 1: Phone is +49 30 1234, (office)",
    ]
    assert rows[1].cells == (("Phone", "+49 30 1234, (office)"),)


def test_header_row_plus_row_headers_is_a_normal_table() -> None:
    body = "<table><tr><th></th><th>Q1</th></tr><tr><th>Revenue</th><td>10</td></tr></table>"
    assert parse_storage_format(body)[1].text == "Row 1 in Table 1: Revenue, and Q1 is 10"


def test_cells_with_lists_macros_and_links_become_one_line() -> None:
    body = (
        "<table><tr><th>Item</th><th>Notes</th></tr><tr><td><p>Release</p></td><td>"
        "<ul><li>Install passes</li><li>Upgrade fails (" + macro("jira", {"key": "OXT-1"}) + ")</li></ul>"
        "<p>" + macro("status", {"title": "OPEN"}) + "</p></td></tr></table>"
    )
    row = parse_storage_format(body)[1]
    assert (
        row.text
        == "Row 1 in Table 1: Item is Release, and Notes is Install passes; Upgrade fails (OXT-1); OPEN"
    )


def test_empty_rows_and_empty_tables_are_skipped() -> None:
    body = (
        "<table><tr><th>A</th><th>B</th></tr><tr><td> </td><td></td></tr><tr><td>x</td><td>y</td></tr></table>"
        "<table><tr><td></td></tr><tr><td><br/></td></tr></table>"
    )
    assert [e.text for e in parse_storage_format(body)][1:] == ["Row 1 in Table 1: A is x, and B is y"]


def test_a_single_cell_table_is_a_layout_box_not_a_table() -> None:
    body = "<table><tr><td><h2>Box</h2><p>Inside.</p><ul><li>item</li></ul></td></tr></table>"
    assert [(e.kind, e.heading, e.text) for e in parse_storage_format(body)] == [
        ("passage", "Box", "Inside."),
        ("list", "Box", "- item"),
    ]


def test_absurd_spans_are_capped() -> None:
    body = '<table><tr><th colspan="100000">A</th></tr><tr><td rowspan="99999">x</td><td>y</td></tr></table>'
    rows = [e for e in parse_storage_format(body) if e.kind == "row"]
    assert rows[0].text.startswith("Row 1 in Table 1: A is x")


@pytest.mark.parametrize("linearizer", LINEARIZERS)
def test_every_linearizer_writes_tables_and_rows(linearizer: str) -> None:
    elements = parse_storage_format(ACTION_ITEMS, linearizer=linearizer)
    assert kinds(elements) == ["table", "row", "row"]
    table, _, alice = elements
    assert "Alice" in table.text and "Bob" in table.text
    assert "Alice" in alice.text and "Bob" not in alice.text
    assert alice.cells == (("Member", "Alice"), ("Task", "Similarity function"))


def test_linearizer_formats() -> None:
    def texts(linearizer: str) -> tuple[str, str]:
        elements = parse_storage_format(ACTION_ITEMS, linearizer=linearizer)
        return elements[0].text, elements[2].text

    assert texts("piped")[1] == "Member | Task | Due\nAlice | Similarity function | "
    assert (
        texts("markdown")[1]
        == "| Member | Task | Due |\n| --- | --- | --- |\n| Alice | Similarity function |  |"
    )
    assert texts("plaintext") == (
        "Bob Rerun the upgrade test Oct 16\nAlice Similarity function",
        "Alice Similarity function",
    )
    html_table = texts("html")[0]
    assert html_table.startswith("<table>\n<tr><th>Member</th>") and "<td>Alice</td>" in html_table


def test_unknown_linearizer_is_an_error() -> None:
    with pytest.raises(ValueError, match="verbalized"):
        parse_storage_format(ACTION_ITEMS, linearizer="json")


# ---- broken input ----------------------------------------------------------------------------------------


def test_broken_xhtml_keeps_whatever_text_it_has() -> None:
    body = (
        '<h2>Title<p>Unclosed <b>bold <table><tr><td>cell</td><ac:structured-macro ac:name="code"><![CDATA[x'
    )
    elements = parse_storage_format(body)
    assert "cell" in " ".join(e.text for e in elements)


def test_no_text_gives_no_elements() -> None:
    assert parse_storage_format("") == []
    assert parse_storage_format(macro("toc") + "<p><br/></p><!-- comment -->") == []


TAGS = [
    "p", "h2", "h3", "ul", "ol", "li", "table", "tbody", "tr", "td", "th", "pre", "div", "strong", "a", "br",
    "ac:structured-macro", "ac:rich-text-body", "ac:plain-text-body", "ac:parameter", "ac:link", "ri:page",
    "ri:user", "ac:task-list", "ac:task", "ac:task-status", "ac:task-body", "ac:image", "ac:layout-cell",
    "ac:adf-extension", "ac:adf-node", "time",
]  # fmt: skip
ATTRIBUTES = [
    "", ' ac:name="code"', ' ac:name="info"', ' ac:name="status"', ' ac:name="jira"', ' ac:name="toc"',
    ' colspan="3"', ' rowspan="0"', ' rowspan="-1"', ' colspan="x"', ' ri:content-title="T"', ' ri:userkey="k"',
    ' type="decision-list"', ' datetime="2024-01-01"',
]  # fmt: skip
FRAGMENT = st.one_of(
    st.tuples(st.sampled_from(TAGS), st.sampled_from(ATTRIBUTES)).map(lambda t: f"<{t[0]}{t[1]}>"),
    st.sampled_from(TAGS).map(lambda t: f"</{t}>"),
    st.sampled_from(TAGS).map(lambda t: f"<{t}/>"),
    st.sampled_from(
        ["<![CDATA[", "]]>", "<!--", "-->", "&nbsp;", "&bogus;", "<", ">", "&", '"', "\x00", "\n"]
    ),
    st.text(max_size=12),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(FRAGMENT, max_size=60).map("".join))
def test_tag_soup_never_raises(body: str) -> None:
    elements = parse_storage_format(body)
    assert all(isinstance(e, Element) and e.text.strip() for e in elements)
    page = Page(id="1", space="S", title="T", url="u", body=body)
    try:
        evidence = extract_evidence(page)
    except PageParseError:
        return
    assert evidence and all(e.text.strip() for e in evidence)


SAMPLE_BODIES = [page.body for page in load_pages(SAMPLE_WIKI_DIR)[0]]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(SAMPLE_BODIES), st.floats(min_value=0, max_value=1))
def test_truncated_real_pages_never_raise(body: str, fraction: float) -> None:
    truncated = body[: int(len(body) * fraction)]
    page = Page(id="1", space="S", title="T", url="u", body=truncated)
    try:
        extract_evidence(page)
    except PageParseError:
        pass


def test_deeply_nested_markup_is_a_page_error_or_text() -> None:
    body = "<div>" * 5000 + "<p>deep</p>" + "</div>" * 5000
    page = Page(id="1", space="S", title="T", url="u", body=body)
    try:
        evidence = extract_evidence(page)
    except PageParseError as error:
        assert "nested" in str(error) or "parse" in str(error)
    else:
        assert evidence[0].text == "deep"
