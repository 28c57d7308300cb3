"""Reader for inspect_ai eval logs (``.eval`` and ``.json``): ``logs`` (which files are logs,
their headers, their samples one at a time), ``rows`` (a sample's normalized row, its scorer's
value as ``correct``) and ``reader`` (the batches). Named ``inspect_logs`` so as not to shadow
the library, ``inspect_ai``, which it imports on first use (``forgetmap[inspect]``)."""
