"""Local stand-ins for the services hubwatch talks to (the Hugging Face Hub, OSV), for tests and benchmarks."""
