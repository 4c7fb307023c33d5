"""kbqa_lit: PyTorch Lightning framework for complex knowledge-base question answering."""

from kbqa_lit import _deprecated

__version__ = "0.1.0"

_deprecated.install()
