"""The LZG's use cases, one module per RPC family, each reading as the spec's steps (SPEC §5).

Each validates its input (InvalidArgument naming the field, before anything is written), combines
the pure formulas (``weights``, ``layers``, ``edges``, ``spreading``, ``usage``) with the store, and
writes its pipeline-log entries. Proto translation lives in ``servicer.py``; SQL in ``store.py``.
"""
