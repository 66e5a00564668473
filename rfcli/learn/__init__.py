"""Learners on random features: linear SVM, kernel ridge regression, GP regression.

A model kind's module is imported when a model of that kind is first made or loaded
(:data:`rfcli.learn.linear.MODELS` declares them lazily): the learners' modules load
scipy, which an encode that only needs the bandwidth search does not.  This package's own
names load rfcli.learn.linear when first asked for, so that a module of the package
(rfcli.learn.bandwidth for an encode's median heuristic) loads no learner."""

__all__ = ["MODELS", "LinearModel"]


def __getattr__(name: str):
    if name in __all__:
        from rfcli.learn import linear

        return getattr(linear, name)
    raise AttributeError(f"module 'rfcli.learn' has no attribute {name!r}")
