"""Where the process runs: settings (``FORGETMAP_*``), the broker URL, the roots that confine model
paths, and progress reporting for long commands."""
