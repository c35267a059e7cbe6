"""Physics in a model's data, architecture and loss: a detector's response and its unfolding, a
pendulum's dynamics and energy.

Also clusters of identical particles under a pair potential (``particles``), and the
energy-conservation penalty of a learned vector field (``constraints``).
"""
