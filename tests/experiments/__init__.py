"""The lessons' longer experiments (attention/experiments)."""
