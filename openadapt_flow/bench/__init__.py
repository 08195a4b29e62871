"""The benchmark behind `make bench`: our rungs and engine beside pyscreeze and the original engine (docs/benchmarks.md)."""
