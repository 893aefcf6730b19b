import pytest

from semverlite import (
    ResolutionError,
    filter_satisfying,
    max_satisfying,
    min_satisfying,
    resolve_all,
)

PUBLISHED = ["0.9.0", "1.0.0", "1.2.0", "1.2.5", "1.4.1", "2.0.0", "2.1.0", "not-a-version"]


def test_max_satisfying():
    assert max_satisfying(PUBLISHED, "^1.2.0") == "1.4.1"
    assert max_satisfying(PUBLISHED, "~1.2.0") == "1.2.5"
    assert max_satisfying(PUBLISHED, ">=3") is None


def test_min_satisfying():
    assert min_satisfying(PUBLISHED, "^1.2.0") == "1.2.0"
    assert min_satisfying(PUBLISHED, "2.x || 0.x") == "0.9.0"


def test_filter_keeps_input_order():
    assert filter_satisfying(["2.1.0", "1.0.0", "2.0.0"], ">=1.0.0 <2.1.0") == ["1.0.0", "2.0.0"]


def test_resolve_all_with_multiple_constraints():
    available = {"left-pad": PUBLISHED, "chalk": ["4.0.0", "4.1.2", "5.0.0"]}
    result = resolve_all({"left-pad": ["^1.0.0", "<1.3"], "chalk": "4"}, available)
    assert result == {"left-pad": "1.2.5", "chalk": "4.1.2"}
    assert resolve_all({"chalk": "4"}, available, prefer="min") == {"chalk": "4.0.0"}


def test_resolve_all_reports_unsatisfied():
    with pytest.raises(ResolutionError) as info:
        resolve_all({"a": "^2.0.0", "b": "*"}, {"a": ["1.0.0"], "b": ["1.0.0"]})
    assert list(info.value.unsatisfied) == ["a"]
