"""The KZG's use cases, one module per RPC family, each reading as the spec's steps (SPEC §3, §4).

Each checks its whole request (InvalidArgument naming the field, before anything is written),
combines the pure rules of ``services.kzg.domain`` with the store's named methods and the
embedding provider, and writes its pipeline-log records. Proto translation lives in
``convert.py``/``servicer.py``; Redis commands only in ``services/kzg/store/``.

``as_of``: Redis expires keys by its own clock, so TTLs are always relative to the moment of the
write (a tier's full 7/14/30 days, the session's 4 h). An explicit ``as_of`` pins the recorded
times — ``erstellt_am`` of an entry, ``created_at`` of a session turn, ``gesetzt_am`` of
hash_dirty — and nothing else; replaying an old turn therefore never writes an entry that is
already expired.
"""
