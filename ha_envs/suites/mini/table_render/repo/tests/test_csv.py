from plaintable import from_csv, read_csv_rows

DATA = """item,price,notes
widget,1.5,blue
gadget,10,

gizmo,,spare part
"""


def test_read_csv_rows():
    headers, rows = read_csv_rows(DATA)
    assert headers == ["item", "price", "notes"]
    assert rows == [["widget", "1.5", "blue"], ["gadget", "10", ""], ["gizmo", "", "spare part"]]


def test_read_csv_without_header_and_short_rows():
    headers, rows = read_csv_rows("a;b\nc\n", delimiter=";", header=False)
    assert headers == ["col1", "col2"]
    assert rows == [["a", "b"], ["c", None]]


def test_from_csv_formats_and_aligns_numbers():
    table = from_csv(DATA, columns={"price": {"fmt": ".2f"}})
    assert table.render(style="markdown") == "\n".join([
        "| item   | price | notes      |",
        "|--------|------:|------------|",
        "| widget |  1.50 | blue       |",
        "| gadget | 10.00 |            |",
        "| gizmo  |       | spare part |",
    ])
