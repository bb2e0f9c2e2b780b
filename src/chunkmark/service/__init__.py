"""What the command line and the MCP server both call: the component catalog, a chunking of one
file, a grid's plan and runs in a background thread, the recommendation and a paired comparison
as small JSON-able replies, and the caches' report and pruning. Nothing here prints or parses
options: ``chunkmark.cli`` does that, and ``chunkmark.cli.mcp_server`` wires these functions to
the MCP SDK."""
