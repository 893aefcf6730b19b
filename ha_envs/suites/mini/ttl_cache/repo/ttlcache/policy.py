"""Time-to-live policy: which TTL an entry gets and when it expires."""


def _check_ttl(name, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds or None")
    if value < 0:
        raise ValueError(f"{name} cannot be negative")
    return float(value)


class TTLPolicy:
    """How long entries live.

    * ``default_ttl`` - TTL of entries stored without an explicit one
      (``None``: they never expire).
    * ``max_ttl``     - upper bound for every TTL, including "never".
    * ``sliding``     - when True, every successful read restarts the TTL.
    """

    def __init__(self, default_ttl=None, max_ttl=None, sliding=False):
        self.default_ttl = _check_ttl("default_ttl", default_ttl)
        self.max_ttl = _check_ttl("max_ttl", max_ttl)
        if (self.default_ttl is not None and self.max_ttl is not None
                and self.default_ttl > self.max_ttl):
            raise ValueError("default_ttl cannot exceed max_ttl")
        self.sliding = bool(sliding)

    def resolve(self, ttl=None):
        """The effective TTL (seconds, or None for "never") of a new entry."""
        ttl = _check_ttl("ttl", ttl)
        if ttl is None:
            ttl = self.default_ttl
        if self.max_ttl is not None:
            ttl = self.max_ttl if ttl is None else min(ttl, self.max_ttl)
        return ttl

    def deadline(self, now, ttl):
        """Absolute expiry time of an entry with ``ttl`` stamped at ``now``."""
        if ttl is None:
            return None
        return now + ttl

    def __repr__(self):
        return (f"TTLPolicy(default_ttl={self.default_ttl!r}, "
                f"max_ttl={self.max_ttl!r}, sliding={self.sliding!r})")
