"""Build-time tooling: train the default model, export checkpoints to verified INT8 ONNX bundles, evaluate.

Run modules from the repository root as ``python -m build.<module>``; this package may import torch and
transformers, the ``handler`` package (the runtime) never does.
"""
