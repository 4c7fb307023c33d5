"""TFS-KBQA's LightningModule: the LoRA causal LM fine-tuned on the instruction tasks."""
