"""Physics in a model's data, architecture and loss: a detector's response and its unfolding, a
pendulum's dynamics and energy."""
