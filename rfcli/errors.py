"""Exception hierarchy.  Every error a user can cause is an :class:`RfcliError`;
the CLI turns it into a one-line message and the exit status in ``exit_code``.

Each error also derives from the built-in exception a Python caller expects, as in
scikit-learn, so ``except ValueError`` (or ``TypeError``, ``OSError``) works:

- :class:`UsageError` is a ``ValueError``: a parameter value out of range, or parameters
  that do not make sense together;
- :class:`ParameterTypeError` is a ``TypeError``: a parameter of the wrong type
  (``n_features=2.5``, ``normalized="yes"``).  It is a :class:`UsageError` too (so also a
  ``ValueError``, like scikit-learn's ``InvalidParameterError``);
- :class:`InputError` is a ``ValueError``: input data that cannot be used (a missing
  file, column or row is a bad value of the path or column parameters);
- :class:`StoreError` is a ``ValueError``: a store that is missing, incomplete, corrupt
  or of another version is a bad value of the store path;
- :class:`IncompatibleError` is a ``ValueError``: things made with different maps or
  quantizers used together;
- :class:`ConfigError` is a ``ValueError``: a malformed JSON config or model file;
- :class:`OutputError` is an ``OSError``: an output path that exists or cannot be
  written (as ``open(path, "x")`` raises ``FileExistsError``, an ``OSError``);
- :class:`Interrupted` is only an :class:`RfcliError` (a run stopped by Ctrl-C or
  SIGTERM).

A solver that ends without converging is no error: it warns (:class:`ConvergenceWarning`)
and its report says so; the command line prints the warning on stderr.

Library messages name the Python parameters (``n_features must be >= 1, got 0``); the
CLI checks its options itself first, so its messages name the flags.
"""


def first_line(e: BaseException) -> str:
    """The first line of an exception's message (or its type name), for one-line errors."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def did_you_mean(name: str, choices) -> str:
    """`` (did you mean 'label'?)`` when ``name`` is close to one of ``choices`` (difflib),
    else ``""``: for messages about an unknown column, label, id or other name."""
    import difflib

    choices = [str(c) for c in choices]
    close = difflib.get_close_matches(str(name), choices, n=1, cutoff=0.6)
    if not close:  # a case slip: 'Label' for 'label'
        close = [c for c in choices if c.lower() == str(name).lower()][:1]
    return f" (did you mean {close[0]!r}?)" if close else ""


class RfcliError(Exception):
    """Root of all rfcli errors (a problem with what the user asked for)."""

    exit_code = 2


class UsageError(RfcliError, ValueError):
    """Parameters that are out of range or do not make sense together."""


class ParameterTypeError(UsageError, TypeError):
    """A parameter of the wrong type (a ``TypeError``, and a ``UsageError`` as before)."""


class InputError(RfcliError, ValueError):
    """Input data that cannot be read or used (file, column, row)."""


class StoreError(RfcliError, ValueError):
    """A feature store that is missing, incomplete, corrupt or of an unknown version."""


class IncompatibleError(RfcliError, ValueError):
    """Things made with different maps/quantizers used together."""


class ConfigError(RfcliError, ValueError):
    """A malformed JSON config (map, quantizer, model metadata)."""


class OutputError(RfcliError, OSError):
    """An output path that exists (without ``overwrite``) or cannot be written."""


class Interrupted(RfcliError):
    """The user interrupted a run (Ctrl-C, SIGTERM); the message says what was kept
    (an interrupted encode: ``rows_kept`` rows in the partial store ``partial``)."""

    exit_code = 130

    def __init__(self, message: str, partial: str | None = None, rows_kept: int | None = None):
        super().__init__(message)
        self.partial, self.rows_kept = partial, rows_kept


class ConvergenceWarning(UserWarning):
    """A solver stopped before its convergence test held (iteration limit, line search):
    the model is written, and its report says ``converged: False`` and why (as
    scikit-learn's ``ConvergenceWarning``)."""


class PrecisionWarning(UserWarning):
    """Input values that lose their digits where the features are computed: columns far
    from zero compared with their spread, rounded to float32 by the maps that compute in
    float32 (rfcli.encoder_fit.float32_precision_notes).  The store is written; standardize
    centres the columns first."""


def check_int(value, name: str, minimum: int | None = None) -> int:
    """``value`` as an int (``ParameterTypeError`` if it is not one, bools included), at
    least ``minimum`` (``UsageError``); the messages name the parameter ``name``."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterTypeError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise UsageError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)
