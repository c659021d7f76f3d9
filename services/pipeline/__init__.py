"""Pipeline service: per-turn orchestration — observe, build the dossier, dispatch (SPEC §6, §7)."""
