"""Input readers, feature stores and small JSON files."""
