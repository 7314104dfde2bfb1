"""Benchmarks, probes and experiments, with the corpora, scoring and clients they share with the tests
(results/ holds their saved figures; requirements.txt the benchmark venv, `make .venv-bench/.installed`)."""
