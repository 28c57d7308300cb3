"""Every typed body that crosses a boundary (HTTP, queue, CLI, form): pydantic models with their
limits, written and read by the same classes on both sides."""
