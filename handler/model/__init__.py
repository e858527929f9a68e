"""The model at run time: the bundle contract, the loader, ONNX Runtime sessions, decoding, batching, memory
hygiene, and one package per model family (``families``). Never imports the API, the adapters or storage.
"""
