"""Learners on random features: linear SVM, kernel ridge regression, GP regression."""

from rfcli.learn import gpr, ridge, svm  # noqa: F401  (register model kinds)
from rfcli.learn.linear import MODELS, LinearModel

__all__ = ["MODELS", "LinearModel"]
