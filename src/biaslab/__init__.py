"""biaslab — the inductive-bias laboratory.

Run an experiment from Python exactly as from the command line::

    import biaslab
    result = biaslab.run("xor", profile="quick", seed=0)
    result.claims        # each claim from the lecture notes beside the measured value
"""

from biaslab.version import __version__

__all__ = ["__version__", "run"]


def run(name=None, **kwargs):
    """Run experiment ``name``; see :func:`biaslab.runner.run` for the arguments."""
    from biaslab.runner import run as _run

    return _run(name, **kwargs)
