"""Imported by :func:`tests.harness.warm_program.__main__.warm_up`: records which process imported it."""

import os

IMPORTED_IN = os.getpid()
