"""Tools an SOP calls: the gateway (permissions, arguments, deadlines, side effects), the built-in
inventory and knowledge-base tools, declared Python and HTTP tools, MCP servers and Google Sheets."""
