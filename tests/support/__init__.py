"""Test fixtures shared across the suite: each module here is loaded as a pytest plugin."""
