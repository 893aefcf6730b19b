import pytest

from plaintable import Column, Table, get_style, render_table


def fruit_table():
    t = Table(["name", "qty", "price"])
    t.add_row(["apple", 3, 1.5])
    t.add_row(["banana", 12, 0.25])
    return t


def test_ascii_style():
    assert fruit_table().render() == "\n".join([
        "+--------+-----+-------+",
        "| name   | qty | price |",
        "+========+=====+=======+",
        "| apple  |   3 |   1.5 |",
        "| banana |  12 |  0.25 |",
        "+--------+-----+-------+",
    ])


def test_grid_style():
    assert fruit_table().render(style="grid") == "\n".join([
        "\u250c\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u252c\u2500\u2500\u2500\u2500\u2500\u252c\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2510",
        "\u2502 name   \u2502 qty \u2502 price \u2502",
        "\u251c\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u253c\u2500\u2500\u2500\u2500\u2500\u253c\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2524",
        "\u2502 apple  \u2502   3 \u2502   1.5 \u2502",
        "\u2502 banana \u2502  12 \u2502  0.25 \u2502",
        "\u2514\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2534\u2500\u2500\u2500\u2500\u2500\u2534\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2518",
    ])


def test_markdown_style_alignment_markers():
    t = Table(["name", Column("qty", align="center"), "price"], fruit_table().rows)
    assert t.render(style="markdown").splitlines()[:2] == [
        "| name   | qty | price |",
        "|--------|:---:|------:|",
    ]


def test_simple_and_plain_styles():
    assert fruit_table().render(style="simple").splitlines() == [
        "name    qty  price",
        "------  ---  -----",
        "apple     3    1.5",
        "banana   12   0.25",
    ]
    assert fruit_table().render(style="plain").splitlines()[0] == "name    qty  price"


def test_wrapping_with_max_width_column_and_row_separators():
    t = Table([Column("desc", max_width=10), "n"])
    t.add_row(["the quick brown fox", 1])
    t.add_row(["supercalifragilistic", 22])
    assert t.render(row_separators=True) == "\n".join([
        "+------------+----+",
        "| desc       |  n |",
        "+============+====+",
        "| the quick  |  1 |",
        "| brown fox  |    |",
        "+------------+----+",
        "| supercalif | 22 |",
        "| ragilistic |    |",
        "+------------+----+",
    ])


def test_truncation_when_wrap_disabled():
    t = Table([Column("desc", width=6, wrap=False)], [["abcdefghij"]])
    assert t.render().splitlines()[3] == "| abcde\u2026 |"


def test_max_width_shrinks_widest_column():
    t = Table(["a", "b"], [["x" * 30, "y" * 10]])
    lines = t.render(max_width=30).splitlines()
    assert all(len(line) == 30 for line in lines)


def test_dict_rows_missing_values_and_no_header():
    t = Table([Column("k"), Column("v", missing="-")])
    t.add_row({"k": "a"})
    t.add_row({"k": "b", "v": 2})
    assert t.render(style="plain", show_header=False).splitlines() == ["a  -", "b  2"]
    with pytest.raises(KeyError):
        t.add_row({"zzz": 1})


def test_row_length_checked():
    with pytest.raises(ValueError):
        Table(["a"]).add_row([1, 2])


def test_from_records_and_sort():
    t = Table.from_records([{"n": "b", "x": 2}, {"n": "a", "y": 1}])
    assert [c.header for c in t.columns] == ["n", "x", "y"]
    t.sort_by("n")
    assert t.rows[0][0] == "a"


def test_render_table_shortcut_and_unknown_style():
    text = render_table([[1, 2]], ["a", "b"], style="simple")
    assert text.splitlines()[0] == "a  b"
    with pytest.raises(ValueError):
        get_style("fancy")
