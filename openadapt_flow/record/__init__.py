"""A recorded demonstration compiled to a bundle (`flow record`): templates, steps, params, facts, effects."""
