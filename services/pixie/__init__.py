"""Pixie: the background scheduler — promotion worker, daily decay and log retention (SPEC §9)."""
