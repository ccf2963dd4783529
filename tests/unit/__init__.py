"""unit package."""
