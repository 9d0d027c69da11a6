"""The pieces of the KernelBench problem datasets (any process).

``kernelbench.dataset`` is the entry point (upstream's path) and re-exports the public
names: :mod:`.problems` (the problem record and the dataset base classes),
:mod:`.huggingface` (the Hugging Face loader) and :mod:`.subsets` (upstream's
representative problem lists).  Importing this package imports nothing.
"""
