"""Expected parses of the fixtures in tests/fixtures (see regen.py)."""
