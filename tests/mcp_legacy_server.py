"""An MCP server of the handshake era only (protocol 2025-06-18), written as plain JSON-RPC over
stdio: it knows ``initialize``, ``tools/list`` and ``tools/call`` and answers every other method
(``server/discover`` among them) "method not found" — what a client of 2026-07-28 meets in a server
nobody updated. ``tests/test_mcp_protocol.py`` starts it."""

import json
import sys

VERSION = "2025-06-18"


def answer(message: dict) -> dict | None:
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None  # a notification (notifications/initialized): nothing to say
    if method == "initialize":
        result = {"protocolVersion": VERSION, "capabilities": {"tools": {}}, "serverInfo": {"name": "legacy", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "echo", "description": "Say it back.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}
    elif method == "tools/call":
        text = (message.get("params") or {}).get("arguments", {}).get("text", "")
        result = {"content": [{"type": "text", "text": f"echo: {text}"}]}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"Method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


for line in sys.stdin:
    if line.strip():
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
