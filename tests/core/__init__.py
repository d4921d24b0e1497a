"""The core (attention/*.py) against torch and hand computations; its error messages."""
