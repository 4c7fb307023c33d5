"""TFS-KBQA's DataModule: the instruction tasks S1, S2-t1, S2-t2, S3."""
