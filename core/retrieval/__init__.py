"""Finding by meaning and by words: the embedding model (ONNX Runtime or torch) and the indexes over it."""
