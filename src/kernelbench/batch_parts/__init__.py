"""The pieces of batch evaluation (parent process).

``kernelbench.batch`` is the entry point and re-exports the public names:
:mod:`.plan` (what a batch evaluates: configurations, resume decisions),
:mod:`.runner` (running the work list on the devices and merging each record) and
:mod:`.summary` (the lines printed after a batch).  Importing this package imports
nothing.
"""
