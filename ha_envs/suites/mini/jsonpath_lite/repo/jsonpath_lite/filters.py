"""Evaluation of filter expressions (the ``?(...)`` selector).

Semantics follow RFC 9535 closely:

* a path used as an operand of a comparison must be singular; it yields its single value, or
  *Nothing* when it selects no value;
* ``==`` is deep equality; two *Nothing* are equal; ``true``/``false`` are never equal to numbers;
* ``<``, ``<=``, ``>``, ``>=`` compare two numbers or two strings; anything else is false;
* ``!=`` is the negation of ``==``;
* a path alone is an existence test (a member whose value is ``null`` exists).
"""

from . import nodes as n

NOTHING = object()


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_equal(a, b):
    """Deep equality where booleans and numbers never compare equal."""
    if a is NOTHING or b is NOTHING:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if type(a) is not type(b) and not (a is None or b is None):
        return False
    return a == b


def json_less(a, b):
    if _is_number(a) and _is_number(b):
        return a < b
    if isinstance(a, str) and isinstance(b, str):
        return a < b
    return False


def compare(op, a, b):
    if op == "==":
        return json_equal(a, b)
    if op == "!=":
        return not json_equal(a, b)
    if op == "<":
        return json_less(a, b)
    if op == ">":
        return json_less(b, a)
    if op == "<=":
        return json_less(a, b) or (json_equal(a, b) and (_is_number(a) or isinstance(a, str)))
    if op == ">=":
        return json_less(b, a) or (json_equal(a, b) and (_is_number(a) or isinstance(a, str)))
    raise ValueError(f"unknown comparison operator {op!r}")


class FilterContext:
    """Evaluates filter expressions for an :class:`~jsonpath_lite.evaluator.Evaluator`."""

    def __init__(self, evaluator):
        self.evaluator = evaluator

    def test(self, expression, current, location=()):
        """Whether ``expression`` holds for the child ``current``."""
        if isinstance(expression, n.Or):
            return any(self.test(op, current, location) for op in expression.operands)
        if isinstance(expression, n.And):
            return all(self.test(op, current, location) for op in expression.operands)
        if isinstance(expression, n.Not):
            return not self.test(expression.operand, current, location)
        if isinstance(expression, n.Exists):
            return bool(self.evaluator.evaluate(expression.path, current, location))
        if isinstance(expression, n.Comparison):
            left = self.value_of(expression.left, current, location)
            right = self.value_of(expression.right, current, location)
            return compare(expression.op, left, right)
        raise TypeError(f"not a test expression: {expression!r}")

    def value_of(self, operand, current, location):
        """The value of a comparison operand (a literal or a singular path)."""
        if isinstance(operand, n.Literal):
            return operand.value
        if isinstance(operand, n.Path):
            nodes = self.evaluator.evaluate(operand, current, location)
            if len(nodes) == 1:
                return nodes[0][0]
            return NOTHING
        # a parenthesised test used as an operand: compare its truth value
        return self.test(operand, current, location)
