"""The runner's parts: worker processes, artefacts of a run, phase metrics, orphan reaping."""
