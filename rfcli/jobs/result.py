"""What a train job returns (:class:`TrainResult`) and the checks of its model file; apart
from the job so that ``predict`` and ``evaluate``, which take a result as well as a model
file, load no learner."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rfcli.encoder import Encoder
from rfcli.errors import OutputError, UsageError
from rfcli.io import location
from rfcli.learn.linear import LinearModel
from rfcli.learn.model_file import save_model
from rfcli.learn.targets import Outputs


@dataclass
class TrainResult:
    """What a train job returns (svm, krr and gpr alike).  :meth:`save` writes the model
    file; ``rfcli.predict`` and ``rfcli.evaluate`` take the result itself as well as a
    model file.

    Parameters
    ----------
    model : LinearModel
        The fitted model (:class:`rfcli.learn.svm.LinearSVM`, ridge or GP regression).
    report : dict
        The training report (chosen C / alpha, cross-validation scores, passes,
        convergence), also stored in the model file.
    seconds : float
        Wall time of the job.
    encoder : Encoder or None, default=None
        The encoder the model's features come from.
    trained_on : dict, default={}
        What the model file records it was trained on: the store or input, the label
        column.
    """

    model: LinearModel
    report: dict[str, Any]
    seconds: float
    encoder: Encoder | None = None
    trained_on: dict[str, Any] = field(default_factory=dict)

    def save(self, path: str, *, overwrite: bool = False) -> str:
        """Write the model file (JSON and arrays, no pickle) that ``rfcli predict`` uses.

        Parameters
        ----------
        path : str
            The model file (``.npz``).
        overwrite : bool, default=False
            Replace an existing file.

        Returns
        -------
        str
            ``path``.

        Raises
        ------
        UsageError
            A ridge of several outputs (a model file holds one).
        OutputError
            ``path`` exists (without ``overwrite``).
        """
        targets = self.model.targets
        check_one_output(targets.n_outputs if isinstance(targets, Outputs) else 1)
        save_model(path, self.model, self.encoder, {"trained_on": self.trained_on},
                   overwrite=overwrite)  # fmt: skip
        return path


def check_one_output(outputs: int) -> None:
    if outputs > 1:
        raise UsageError(
            f"a model file holds one regression output; y has {outputs} columns (train "
            "one model per column to save them, or give no output)"
        )


def check_output(output: str | None, overwrite: bool) -> None:
    """Refuse to replace an existing model file without ``overwrite``."""
    if output is not None and location.exists(output) and not overwrite:
        raise OutputError(f"{output}: already exists (set overwrite to replace it)")


def warn_if_not_converged(report: dict[str, Any], what: str) -> str | None:
    """A :class:`~rfcli.errors.ConvergenceWarning` when the report says its solver stopped
    without converging (``converged`` or ``search_converged`` false); the warning's text is
    kept in the report (``warning``) and returned."""
    import warnings

    from rfcli.errors import ConvergenceWarning

    if report.get("converged", True) and report.get("search_converged", True):
        return None
    why = report.get("message") or "the iteration limit or the tolerance was reached first"
    if "converged" in report and not report["converged"] and "iterations" in report:
        text = (f"{what} did not converge after {report['iterations']} iterations ({why}); "
                "the model is the last iterate: raise max_iter or tol")  # fmt: skip
    else:
        text = f"{what} did not converge ({why}); the model is the best point reached"
    report["warning"] = text
    warnings.warn(text, ConvergenceWarning, stacklevel=3)
    return text
