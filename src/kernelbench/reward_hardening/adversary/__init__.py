"""The adaptive adversary: attack mutations and a reward-seeking agent loop.

``mutate``    semantics-preserving source transforms of attack candidates (the transforms
              themselves in ``mutate_names`` and ``mutate_shape``, helpers in ``mutate_ast``);
``campaign``  every attack fixture through every transform, judged by the evaluator;
``seeds``     attack seeds of three classes (``seed_first_read``, ``seed_read_path``,
              ``seed_outlives``, on ``seedlib``) and the mutation engine around them;
``seed_campaign``  every seed and N mutants under enforce, both policies, reported per class;
``agent``     a litellm agent whose reward is a verified speedup, saving impossible wins.

They use only ``evaluate_hardened`` (and the precheck for the static tier) and the
red-team fixture manifest.  ``scripts/reward_hardening_adversary.py`` is the command;
``docs/adversary.md`` describes both halves.
"""
