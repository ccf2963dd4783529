"""The run-record stream shared by the apps (ring: pure data): one JSON line per test execution or
chaos run (:mod:`records.run_record`) and the phase metrics computed black-box from what a run
observed (:mod:`records.phases`). Imports no app."""
