"""A program for the warm-start tests (``python -m tests.harness.warm_program ACTION ...``)."""
