"""LightningModules: the shared trained parts here, in ``modules/<system>/`` what one system alone trains.

Shared: the seq2seq multitask generator (CoQ's generator, FC-KBQA's skeleton parser and composer),
the LoRA causal LM (TFS-KBQA's models, Keqing's decomposer), the cross-encoder retriever, checkpoint
loading and the training set-up.
"""
