"""Untrusted side: the harness that loads and runs ``ModelNew``.

Everything in this folder runs inside the candidate's worker process, next to code an
adversary wrote. It is treated as compromised the moment the candidate is imported:
what it reports is raw evidence that the parent and the judge check, never a verdict.

:mod:`.worker` is the command loop; :mod:`.capture` (functions captured before the
candidate is imported), :mod:`.outputs` (a result's facts) and :mod:`.profiling` (the
``profile`` command) are all imported with it, before any candidate code runs.
"""
