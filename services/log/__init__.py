"""Log service: the forensic pipeline_log (SPEC §8, syn §10)."""
