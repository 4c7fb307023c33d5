"""What several test modules share: the real data beside the checkout, skip rules, toy data, test doubles.

- ``shared_data``: paths under ``../shared/data`` (a test skips, with the path, when they are absent);
- ``run_if``: one ``run_if(...)`` mark for every "needs X" skip (CUDA, DeepSpeed, Virtuoso, an extra);
- ``toy``: hand-made born-in examples; ``coq_toy_data``: CoQ split files of 1-hop, 2-hop and COUNT;
- ``no_gold``: test files stripped of their gold fields, and a small world whose rows carry every kind of gold;
- ``sexpr_strategies``: hypothesis strategies of S-expression text;
- ``exec_eval_doubles``: a scripted generator and datamodule for the execution-guided callback;
- ``llm_http_server``: a real local OpenAI-compatible HTTP server with scripted answers;
- ``sweep_space``: W&B sweep YAMLs expanded offline.

Tiny models come from the package's own backbone factories (``kbqa_lit.backbones``), which build
them from configs; tests never download anything.
"""
