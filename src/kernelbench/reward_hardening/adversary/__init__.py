"""The adaptive adversary: attack mutations and a reward-seeking agent loop.

``mutate``    semantics-preserving source transforms of attack candidates;
``campaign``  every attack fixture through every transform, judged by the evaluator;
``agent``     a litellm agent whose reward is a verified speedup, saving impossible wins.

They use only ``evaluate_hardened`` (and the precheck for the static tier) and the
red-team fixture manifest.  ``scripts/reward_hardening_adversary.py`` is the command;
``docs/adversary.md`` describes both halves.
"""
