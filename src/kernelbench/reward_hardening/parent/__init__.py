"""Trusted parent process: owns hidden seeds, plans, verdicts and records.

Runs in the evaluator's own process (the batch parent). It starts the judge and the
candidate workers, sends requests over :mod:`..ipc`, turns their replies into
evidence (:mod:`.evidence`), hands evidence to :mod:`..detectors` and writes the
schema-1.1 record (:mod:`.records`). Nothing here is imported by the candidate.
"""
