"""Building hashable cache keys from call arguments."""


class HashedKey(tuple):
    """A plain tuple with a recognisable repr."""

    __slots__ = ()

    def __repr__(self):
        return f"HashedKey{tuple.__repr__(self)}"


_KWD_MARK = ("__kwargs__",)


def make_key(args, kwargs, typed=False):
    """Key for a call with ``args`` and ``kwargs``.

    Keyword order does not matter. With ``typed=True`` arguments of different
    types (``1`` and ``1.0``) give different keys. Raises TypeError for
    unhashable arguments.
    """
    items = list(args)
    if kwargs:
        items.extend(_KWD_MARK)
        for name in sorted(kwargs):
            items.append((name, kwargs[name]))
    if typed:
        items.extend(type(a) for a in args)
        items.extend(type(kwargs[name]) for name in sorted(kwargs))
    key = HashedKey(items)
    hash(key)
    return key
