"""Conformance suite: ordinary dask programs, run on real ``distributed`` and on the model.

To add a program, write in ``programs.py``, in its area's section::

    @program                      # @program(remote=True): also run on multi-process dask
    def area_what_it_checks(b):   # the prefix before "_" is the area (harness.AREAS)
        f = b.client.submit(inc, 1)
        return f.key, f.result()  # plain data: what a dask user can observe

Use dask's API as a dask user would (``b.client``, names from ``b.ns``, ``b.new_client()``),
``b.settle()`` before reading ``b.tasks()`` / ``b.state(key)`` / ``b.holders(key)``, and
``b.gate()`` / ``gate_wait`` / ``b.open(g)`` for a task that must stay pending (never a
sleep that makes a race happen on cue).  Ids, tokens, uuids and worker addresses are
normalised for you.  Run it on dask twice (``python tests/conformance/report.py --dask-only
--repeat 2 -k NAME``) before trusting it.  If the model differs on purpose, add the program to
``known.py`` with the reason; a failing program is otherwise a bug of the model.
"""
