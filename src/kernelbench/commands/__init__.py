"""The evaluator's commands: one implementation behind each script and ``kernelguard`` subcommand.

* ``check``: ``scripts/run_and_check.py``, ``kernelguard check``
* ``evaluate``: ``scripts/eval_from_generations.py``, ``kernelguard eval``
* ``analyze``: ``scripts/benchmark_eval_analysis.py``, ``kernelguard analyze``
* ``demo``: ``scripts/make_demo_run.py``, ``kernelguard demo-run``

Each module keeps the names the script had (its config class, ``main`` and
helpers), so code that loaded a script by path still finds them on the script; the
scripts only import the module, take over its names and run its ``entry``.  Both
take the same upstream ``key=value`` arguments.
"""
