"""Fixtures for the data-layer tests: an isolated cache and the fake Hub (tests/fakehub.py)."""

from tests.fakehub_fixtures import data_env, fake_hub, hub_scenario  # noqa: F401
