"""Benchmarks: a turn's latency, the API's throughput, processes on shared sessions, memory, the first render."""
