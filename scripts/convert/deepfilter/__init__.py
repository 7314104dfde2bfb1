"""DeepFilterNet 3 on LiteRT: the streaming rewrite of its ONNX graphs, conversion and checks."""
