"""KZG service: session memory and short-term memory in Redis with vector search (SPEC §3, §4)."""
