"""Benchmark harnesses that run through the product path (LoCoMo)."""
