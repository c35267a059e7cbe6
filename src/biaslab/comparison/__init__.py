"""Which prior fits one's own data: candidate architectures matched to the data's kind
(:mod:`~biaslab.comparison.candidates`) and one protocol that trains and judges them all alike
(:mod:`~biaslab.comparison.protocol`), for ``biaslab compare``."""
