"""kbqa_lit: PyTorch Lightning framework for complex knowledge-base question answering."""

__version__ = "0.1.0"
