"""The body rules: one title rule, one compose, one strip, one newest-first order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memvault import note
from memvault.models import MemoryInfo, sort_infos


def info(id_: str, updated: str | None, importance: float = 0.5) -> MemoryInfo:
    return MemoryInfo(
        id_, f"{id_}.md", id_, "fact", "active", (), (), None, updated, importance, 0.8
    )


def test_newest_first_compares_instants_not_text_and_puts_missing_times_last() -> None:
    # 10:00+02:00 is 08:00 UTC: older than 09:30 UTC although its text sorts higher
    infos = [
        info("a", "2026-01-01T10:00:00+02:00"),
        info("b", None),
        info("c", "2026-01-01T09:30:00+00:00"),
    ]
    assert [i.id for i in sort_infos(infos, "updated")] == ["c", "a", "b"]
    assert [i.id for i in sort_infos(infos, "path")] == ["a", "b", "c"]


def test_importance_sort_breaks_ties_by_newest() -> None:
    infos = [
        info("old", "2025-01-01", 0.9),
        info("new", "2026-01-01", 0.9),
        info("low", "2027-01-01", 0.1),
    ]
    assert [i.id for i in sort_infos(infos, "importance")] == ["new", "old", "low"]


def test_compose_and_strip_title_are_inverse() -> None:
    body = note.compose("Coffee", "The user drinks flat whites.")
    assert body == "# Coffee\n\nThe user drinks flat whites.\n"
    assert note.strip_title(body) == "The user drinks flat whites."
    assert note.compose("ignored", "# Own title\n\ntext") == "# Own title\n\ntext\n"


@given(st.text(min_size=1).filter(lambda t: t.strip() and not t.strip().startswith("#")))
def test_strip_title_recovers_any_composed_content(content: str) -> None:
    assert note.strip_title(note.compose("T", content)) == content.strip()


def test_a_title_from_content_is_cut_at_a_word() -> None:
    title = note.title_from("# " + "word " * 30)
    assert title.endswith("...") and len(title) <= 63 and "wor..." not in title


def test_naive_times_take_the_given_zone() -> None:
    moment = note.parse_time("2026-11-30")
    assert moment is not None and moment.utcoffset() is not None
    assert note.parse_time("not a time") is None and note.timestamp(None) == float("-inf")


def test_inline_tags_come_from_prose_only_as_obsidian_reads_them() -> None:
    body = (
        "# Deps #setup\n"
        "Pinned #build and #日本語 and #nested/tag, not #123 nor foo#bar.\n"
        "Inline `#notatag` code, a URL https://semver.org/#semver and [x](https://a.io/#frag).\n"
        "See [[guide#usage]] and [doc](docs/g.md#intro).\n"
        "```js\nconst v = '#lodash@^1'; a #foo>a\n```\n"
        "%% #hidden %% <!-- #comment -->\n"
    )
    assert note.inline_tags(body) == ["setup", "build", "日本語", "nested/tag"]


def test_links_read_wikilinks_with_label_and_heading_embeds_and_markdown_links() -> None:
    body = (
        "See [[report-style]], [[Bob Lee#Contact|Bob]] and ![[attachments/wb.jpg]].\n"
        "Also ![pic](pics/a%20b.png), [doc](docs/g.md#intro), [web](https://x.org/a.md), "
        "[[#local]] and [top](#anchor).\n"
        "`[[in code]]`\n```\n[[in block]]\n```\n"
    )
    found = [(ln.target, ln.heading, ln.label, ln.embed, ln.wiki) for ln in note.links(body)]
    assert found == [
        ("report-style", None, None, False, True),
        ("Bob Lee", "Contact", "Bob", False, True),
        ("attachments/wb.jpg", None, None, True, True),
        ("pics/a b.png", None, "pic", True, False),
        ("docs/g.md", "intro", "doc", False, False),
        ("", "local", None, False, True),
    ]


def test_hostile_lines_parse_as_obsidian_reads_them() -> None:
    # A note may hold a megabyte of "[" or "`" (a pasted log, a hostile file): every parser
    # must stay linear (benchmarks/hostile_parse.py) and still read what is around it.
    def targets(body: str) -> list[str]:
        return [link.target for link in note.links(body)]

    assert targets("[" * 3000 + "[a](x.md)") == ["x.md"]
    # a label may hold balanced brackets, as in CommonMark (it was no link at all)
    assert [(x.target, x.label) for x in note.links("[see [1]](x.md)")] == [("x.md", "see [1]")]
    assert [(x.target, x.label) for x in note.links("[x [y](z.md)")] == [("z.md", "y")]
    assert targets("[[x]](y.md)") == ["x"]  # a wikilink, then text
    assert targets("`" * 3000 + " [[y]]") == ["y"]
    assert targets("~" * 3000 + " [[y]]") == ["y"]
    assert targets("<!--" * 1000 + "[[z]]") == ["z"]  # a comment never closed hides nothing
    assert targets("%%" + "a%" * 1000 + "[[z]]") == ["z"]
    assert targets("%%[[hidden]]%% <!-- [[gone]] --> [[kept]]") == ["kept"]
    # a run of backticks is closed only by a run of the same length (CommonMark): ``` with
    # no ``` after it is text, and so is the lone ` after the link
    assert targets("```[[a]]`") == ["a"]
    assert targets("``code ` [[in code]]`` [[out]]") == ["out"]
    assert note.inline_tags("a-" * 2000 + "://x.org/#frag #real") == ["real"]
    assert note.heading("# a" + " " * 3000 + "b") == "a" + " " * 3000 + "b"


def test_a_heading_drops_a_closing_run_of_hashes_but_not_a_hash_of_its_text() -> None:
    assert note.heading("# Title ##\n") == "Title"
    assert note.heading("# C#\nbody") == "C#"
    assert note.heading("#   \n") is None  # an empty heading: the title falls back
    assert note.heading("text\n#tag\n") is None
    assert note.heading("#\n\nFoo\n") is None  # an empty heading, then a paragraph


def test_a_comment_in_a_code_block_or_a_hidden_heading_is_no_title() -> None:
    assert note.heading("```bash\n# install deps\npip install x\n```\n# Setup\n") == "Setup"
    assert note.heading("<!--\n# Old title\n-->\n# New title\n") == "New title"
    assert note.heading("%%\n# Draft\n%%\nno heading\n") is None
    assert note.heading("# `npm install` notes\n") == "`npm install` notes"
    assert note.heading("#%% a comment %% text\n") is None  # "#text" is no heading


@given(st.text(alphabet="[]()<>!#%`~-|^:/\\ \nax", max_size=60))
def test_prose_keeps_every_character_in_place(body: str) -> None:
    assert len(note.prose(body)) == len(body)
    for link in note.links(body):
        assert "\n" not in link.target


def test_inline_code_ends_with_its_paragraph() -> None:
    # a lone backtick in one paragraph and one further down hid every link between them
    body = "Press ` to open the console.\n\nSee [[kept]] and #tag.\n \nThen ` again.\n"
    assert [link.target for link in note.links(body)] == ["kept"]
    assert note.inline_tags(body) == ["tag"]
    assert note.links("a `multi\nline [[code]]` b\n") == []


def test_code_in_list_items_and_callouts_holds_no_links() -> None:
    # bash's [[ -f x ]] and TOML's [[bin]] in an indented or quoted code block were links,
    # and broken ones for doctor; ```x``` on one line is inline code, not a fence that
    # hid the rest of the note
    def targets(body: str) -> list[str]:
        return [link.target for link in note.links(body)]

    listed = "- step\n    ```bash\n    x=1\n\n    if [[ -f x ]]; then :; fi\n    ```\n- [[real]]\n"
    assert targets(listed) == ["real"]
    quoted = '> [!tip] Code\n> ```toml\n> [[bin]]\n>\n> name = "x"\n> ```\n\n[[real]]\n'
    assert targets(quoted) == ["real"]
    assert targets("```x``` [[real]]\n\nmore [[real2]]\n") == ["real", "real2"]
    assert note.heading("- step\n    ```bash\n    # a comment\n    ```\n# Title\n") == "Title"
