"""Learners on random features: linear SVM, kernel ridge regression, GP regression.

A model kind's module is imported when a model of that kind is first made or loaded
(:data:`rfcli.learn.linear.MODELS` declares them lazily): the learners' modules load
scipy, which an encode that only needs the bandwidth search does not."""

from rfcli.learn.linear import MODELS, LinearModel

__all__ = ["MODELS", "LinearModel"]
