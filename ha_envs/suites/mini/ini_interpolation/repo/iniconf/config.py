"""The :class:`Config` object: sections, options and typed getters."""

from . import convert
from .errors import NoOptionError, NoSectionError
from .interpolation import MAX_DEPTH, Interpolator
from .parser import DEFAULT_SECTION, ParsedConfig, optionxform, parse
from .writer import dumps

_UNSET = object()


class Config:
    """An INI configuration with ``${...}`` interpolation.

    >>> cfg = Config.from_string("[a]\\nx = 1\\ny = ${x}0")
    >>> cfg.getint("a", "y")
    10
    """

    def __init__(self, defaults=None, *, interpolation=True, strict=True,
                 allow_no_value=False, max_depth=MAX_DEPTH):
        self._data = ParsedConfig()
        self._strict = strict
        self._allow_no_value = allow_no_value
        self._interpolator = (
            Interpolator(self._raw_lookup, max_depth=max_depth,
                         optionxform=optionxform)
            if interpolation else None
        )
        for key, value in (defaults or {}).items():
            self._data.defaults[optionxform(key)] = _stringify(value)

    # -- loading -------------------------------------------------------------

    @classmethod
    def from_string(cls, text, **kwargs):
        cfg = cls(**kwargs)
        cfg.read_string(text)
        return cfg

    def read_string(self, text):
        parse(text, strict=self._strict, allow_no_value=self._allow_no_value,
              target=self._data)
        return self

    def read_dict(self, mapping):
        """Load ``{section: {option: value}}``; the ``DEFAULT`` key is special."""
        for section, options in mapping.items():
            if section != DEFAULT_SECTION and not self.has_section(section):
                self.add_section(section)
            for key, value in options.items():
                self.set(section, key, value)
        return self

    # -- sections ------------------------------------------------------------

    def sections(self):
        return list(self._data.sections)

    def has_section(self, section):
        return section in self._data.sections

    def add_section(self, section):
        if section == DEFAULT_SECTION:
            raise ValueError("cannot add the DEFAULT section")
        if self.has_section(section):
            from .errors import DuplicateSectionError
            raise DuplicateSectionError(section)
        self._data.sections[section] = {}

    def remove_section(self, section):
        return self._data.sections.pop(section, None) is not None

    def defaults(self):
        return dict(self._data.defaults)

    def __getitem__(self, section):
        if section != DEFAULT_SECTION and not self.has_section(section):
            raise NoSectionError(section)
        return SectionProxy(self, section)

    def __contains__(self, section):
        return section == DEFAULT_SECTION or self.has_section(section)

    def __iter__(self):
        return iter(self.sections())

    # -- options -------------------------------------------------------------

    def _section_dict(self, section):
        if section == DEFAULT_SECTION:
            return self._data.defaults
        try:
            return self._data.sections[section]
        except KeyError:
            raise NoSectionError(section) from None

    def options(self, section):
        """Option names of ``section``, including inherited defaults."""
        own = self._section_dict(section)
        names = list(own)
        names.extend(k for k in self._data.defaults if k not in own)
        return names

    def has_option(self, section, option):
        option = optionxform(option)
        if section != DEFAULT_SECTION and not self.has_section(section):
            return False
        return (option in self._section_dict(section)
                or option in self._data.defaults)

    def _raw_lookup(self, section, option):
        """Raw value of ``[section] option`` with DEFAULT fallback.

        Raises KeyError when absent (the contract of :class:`Interpolator`).
        """
        if section == DEFAULT_SECTION:
            return self._data.defaults[option]
        own = self._data.sections.get(section)
        if own is None:
            raise KeyError(section)
        if option in own:
            return own[option]
        return self._data.defaults[option]

    def get(self, section, option, *, raw=False, fallback=_UNSET, vars=None):
        """Return the (interpolated) string value of ``[section] option``.

        ``vars`` is a mapping that overrides values of ``section`` for this
        call only.
        """
        key = optionxform(option)
        if vars:
            overrides = {optionxform(k): _stringify(v) for k, v in vars.items()}
            if key in overrides:
                value = overrides[key]
                return value if raw or self._interpolator is None \
                    else self._interpolator.expand(section, key, value)
        if section != DEFAULT_SECTION and not self.has_section(section):
            if fallback is not _UNSET:
                return fallback
            raise NoSectionError(section)
        try:
            value = self._raw_lookup(section, key)
        except KeyError:
            if fallback is not _UNSET:
                return fallback
            raise NoOptionError(section, key) from None
        if raw or self._interpolator is None:
            return value
        return self._interpolator.expand(section, key, value)

    def _get_converted(self, section, option, converter, raw, fallback):
        try:
            value = self.get(section, option, raw=raw)
        except (NoSectionError, NoOptionError):
            if fallback is not _UNSET:
                return fallback
            raise
        if value is None:
            return None
        try:
            return converter(value)
        except ValueError as exc:
            raise ValueError(f"[{section}] {option}: {exc}") from None

    def getint(self, section, option, *, raw=False, fallback=_UNSET):
        return self._get_converted(section, option, convert.to_int, raw, fallback)

    def getfloat(self, section, option, *, raw=False, fallback=_UNSET):
        return self._get_converted(section, option, convert.to_float, raw,
                                   fallback)

    def getboolean(self, section, option, *, raw=False, fallback=_UNSET):
        return self._get_converted(section, option, convert.to_boolean, raw,
                                   fallback)

    def getlist(self, section, option, *, separator=None, raw=False,
                fallback=_UNSET):
        return self._get_converted(
            section, option, lambda v: convert.to_list(v, separator), raw,
            fallback)

    def getduration(self, section, option, *, raw=False, fallback=_UNSET):
        return self._get_converted(section, option, convert.to_duration, raw,
                                   fallback)

    def items(self, section, *, raw=False):
        """``[(option, value), ...]`` for ``section`` including defaults."""
        return [(name, self.get(section, name, raw=raw))
                for name in self.options(section)]

    def set(self, section, option, value):
        self._section_dict(section)[optionxform(option)] = _stringify(value)

    def remove_option(self, section, option):
        return self._section_dict(section).pop(optionxform(option),
                                               _UNSET) is not _UNSET

    # -- output --------------------------------------------------------------

    def to_dict(self, *, raw=False):
        """``{section: {option: value}}`` with defaults merged in."""
        return {name: dict(self.items(name, raw=raw)) for name in self.sections()}

    def to_string(self):
        return dumps(self._data.defaults, self._data.sections)


class SectionProxy:
    """Mapping-like view of one section: ``cfg["server"]["port"]``."""

    def __init__(self, config, name):
        self._config = config
        self.name = name

    def __getitem__(self, option):
        if not self._config.has_option(self.name, option):
            raise KeyError(option)
        return self._config.get(self.name, option)

    def __setitem__(self, option, value):
        self._config.set(self.name, option, value)

    def __delitem__(self, option):
        if not self._config.remove_option(self.name, option):
            raise KeyError(option)

    def __contains__(self, option):
        return self._config.has_option(self.name, option)

    def __iter__(self):
        return iter(self._config.options(self.name))

    def __len__(self):
        return len(self._config.options(self.name))

    def get(self, option, fallback=None, *, raw=False):
        return self._config.get(self.name, option, raw=raw, fallback=fallback)

    def getint(self, option, fallback=_UNSET):
        return self._config.getint(self.name, option, fallback=fallback)

    def getfloat(self, option, fallback=_UNSET):
        return self._config.getfloat(self.name, option, fallback=fallback)

    def getboolean(self, option, fallback=_UNSET):
        return self._config.getboolean(self.name, option, fallback=fallback)

    def getlist(self, option, fallback=_UNSET):
        return self._config.getlist(self.name, option, fallback=fallback)

    def keys(self):
        return list(self)

    def items(self):
        return self._config.items(self.name)

    def __repr__(self):
        return f"<Section: {self.name}>"


def _stringify(value):
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
