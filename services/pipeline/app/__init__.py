"""The pipeline's use cases, one module per RPC family, each reading as the spec's steps (SPEC §7).

``observe`` (ObserveTurn, ObserveTurns), ``dossier`` (BuildDossier), ``dispatch`` (Dispatch), over the
shared ``context``; ``turn_writer`` analyses and writes a turn for Observe and Dispatch. Proto checks
live in ``validation.py``, the pure formulas in the domain modules, the Redis state in ``store.py``.
"""
