"""TFS-KBQA inference: S1 → S2 → S3 fallback across one or several LoRA models."""
