"""The pieces of the run analysis (parent process, or any tool reading results).

``kernelbench.analysis`` is the entry point and re-exports the public names; see its
docstring for what each module here holds.  Importing this package imports nothing.
"""
