"""Exception hierarchy of iniconf."""


class ConfigError(Exception):
    """Base class of every error raised by iniconf."""


class ParseError(ConfigError):
    """The text could not be parsed."""

    def __init__(self, message, lineno=None, line=None):
        self.message = message
        self.lineno = lineno
        self.line = line
        where = f" (line {lineno}: {line!r})" if lineno is not None else ""
        super().__init__(f"{message}{where}")


class DuplicateSectionError(ParseError):
    """A section header appears twice in strict mode."""

    def __init__(self, section, lineno=None, line=None):
        self.section = section
        super().__init__(f"duplicate section {section!r}", lineno, line)


class DuplicateOptionError(ParseError):
    """An option appears twice in one section in strict mode."""

    def __init__(self, section, option, lineno=None, line=None):
        self.section = section
        self.option = option
        super().__init__(
            f"duplicate option {option!r} in section {section!r}", lineno, line
        )


class NoSectionError(ConfigError, KeyError):
    """The requested section does not exist."""

    def __init__(self, section):
        self.section = section
        super().__init__(f"no section {section!r}")

    def __str__(self):
        return self.args[0]


class NoOptionError(ConfigError, KeyError):
    """The requested option does not exist in the section."""

    def __init__(self, section, option):
        self.section = section
        self.option = option
        super().__init__(f"no option {option!r} in section {section!r}")

    def __str__(self):
        return self.args[0]


class InterpolationError(ConfigError):
    """Base class of interpolation problems."""

    def __init__(self, section, option, message):
        self.section = section
        self.option = option
        super().__init__(message)


class InterpolationSyntaxError(InterpolationError):
    """A malformed ``$`` reference."""

    def __init__(self, section, option, rawval, detail):
        self.rawval = rawval
        super().__init__(
            section,
            option,
            f"bad interpolation syntax in [{section}] {option} = {rawval!r}: {detail}",
        )


class InterpolationMissingOptionError(InterpolationError):
    """A ``${...}`` reference names an option that does not exist.

    ``section`` / ``option`` name the value being expanded; ``ref_section`` /
    ``reference`` name what the reference pointed at.
    """

    def __init__(self, section, option, rawval, ref_section, reference):
        self.rawval = rawval
        self.ref_section = ref_section
        self.reference = reference
        super().__init__(
            section,
            option,
            f"bad reference in [{section}] {option}: "
            f"no option {reference!r} in section {ref_section!r}",
        )


class InterpolationDepthError(InterpolationError):
    """References nest deeper than the configured limit (usually a cycle)."""

    def __init__(self, section, option, rawval, max_depth):
        self.rawval = rawval
        self.max_depth = max_depth
        super().__init__(
            section,
            option,
            f"interpolation of [{section}] {option} exceeded "
            f"{max_depth} levels (recursive reference?)",
        )
