"""biaslab — the inductive-bias laboratory.

Run an experiment from Python exactly as from the command line::

    import biaslab
    result = biaslab.run("xor", profile="quick", seed=0)
    result.claims        # each claim from the lecture notes beside the measured value
    result               # in Jupyter: the claims table in verdict colours, and the figures
    biaslab.show("runs/xor-20261125-101500-0")   # an earlier run, the same way
"""

from biaslab.version import __version__

__all__ = ["__version__", "load", "run", "show"]


def run(name=None, **kwargs):
    """Run experiment ``name``; see :func:`biaslab.runner.run` for the arguments."""
    from biaslab.runner import run as _run

    return _run(name, **kwargs)


def show(path) -> None:
    """Display the run at ``path``: inline in Jupyter, as text elsewhere (``report.display.show``)."""
    from biaslab.report.display import show as _show

    _show(path)


def load(path):
    """The finished run at ``path`` as a Result (:func:`biaslab.report.display.load`)."""
    from biaslab.report.display import load as _load

    return _load(path)
