"""Exception hierarchy.  Every error a user can cause is an :class:`RfcliError`;
the CLI turns it into a one-line message and the exit status in ``exit_code``."""


def first_line(e: BaseException) -> str:
    """The first line of an exception's message (or its type name), for one-line errors."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


class RfcliError(Exception):
    """Root of all rfcli errors (a problem with what the user asked for)."""

    exit_code = 2


class UsageError(RfcliError):
    """Options that do not make sense together, or out of range."""


class InputError(RfcliError):
    """Input data that cannot be read or used (file, column, row)."""


class StoreError(RfcliError):
    """A feature store that is missing, incomplete, corrupt or of an unknown version."""


class IncompatibleError(RfcliError):
    """Things made with different maps/quantizers used together."""


class ConfigError(RfcliError):
    """A malformed JSON config (map, quantizer, model metadata)."""


class OutputError(RfcliError):
    """An output path that exists (without --overwrite) or cannot be written."""


class Interrupted(RfcliError):
    """The user interrupted a run (Ctrl-C, SIGTERM); the message says what was kept."""

    exit_code = 130
