"""Golden curves: the committed data, its identity, and the policy that serves it."""
