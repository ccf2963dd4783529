"""A module the warm-start tests cannot import (a mutant that broke the node, say)."""
