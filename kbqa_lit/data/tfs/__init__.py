"""TFS-KBQA's instruction prompts and targets."""
