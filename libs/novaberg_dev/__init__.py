"""Developer tooling around the five services, never imported by them: the ``novaberg`` CLI, the
demo, the embedded stores, the stack launcher, the throwaway CA, the graph explorer and ``reembed``.

The services' own shared code is ``novaberg_core``; the image ships only that (``deploy/Dockerfile``),
and ``tests/deploy/test_runtime_requirements.py`` keeps ``novaberg_core`` and ``services`` from
importing this package.
"""
