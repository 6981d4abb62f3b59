"""The one table of known differences: program name -> why the model may differ from dask.

A key is a program name (the difference is accepted on every model network) or
``"name[network]"`` (on that network only).  Only real, deliberate, reasoned differences
belong here — never a program that fails because the model is not finished.
"""

KNOWN: dict[str, str] = {}
