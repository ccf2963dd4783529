"""reference_controller package."""
