"""CoQ's own LightningModule: the joint relation/entity classifier.

Its generator is the shared :class:`~kbqa_lit.modules.multitask_generator.MultitaskGenerator`.
"""
