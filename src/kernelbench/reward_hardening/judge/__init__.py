"""Trusted judge worker: owns the reference model and every comparison.

Runs in its own worker process, started by the parent with the same containment as the
candidate but never sharing a process with candidate code. It generates hidden inputs
from seeds the parent sends, lends them to the candidate on the device, and compares
outputs (:mod:`.compare`). Only verdict-sized facts go back to the parent.

:mod:`.worker` is the command loop and the comparisons of each request, :mod:`.data`
the hidden inputs, reference outputs and lent memory it works on, :mod:`.values` the
pure helpers over those values (perturbations, output structure, sizes).
"""
