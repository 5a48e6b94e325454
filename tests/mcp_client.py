"""Drives `rag-index serve` with the official Python MCP SDK (PyPI `mcp`), the way an agent
does: start the server over stdio (or connect to `serve --http`'s `/mcp` endpoint over
streamable HTTP), list its tools, call them. Prints one JSON object on stdout for
tests/serve.rs to check.

usage: mcp_client.py BINARY INDEX QUERY SECRET_QUERY HIDDEN_CHUNK_ID [--as LABELS]
       mcp_client.py BINARY INDEX QUERY SECRET_QUERY HIDDEN_CHUNK_ID --http URL [TOKEN]
"""

import asyncio
import contextlib
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


def is_error(result):
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


async def call(session, name, arguments):
    result = await session.call_tool(name, arguments)
    text = text_of(result)
    if is_error(result):
        return {"error": text}
    return json.loads(text)


@contextlib.asynccontextmanager
async def transport(binary, index, extra):
    """(read, write) streams to the server: a child over stdio, or the HTTP endpoint."""
    if extra[:1] == ["--http"]:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = {"Authorization": f"Bearer {extra[2]}"} if len(extra) > 2 else {}
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(extra[1], http_client=client) as streams:
                yield streams[0], streams[1]
        return
    params = StdioServerParameters(
        command=binary,
        args=["serve", "--mcp", "--index", index, *extra],
        env={"RUST_LOG": "error"},
    )
    async with stdio_client(params) as (read, write):
        yield read, write


async def main():
    binary, index, query, secret_query, hidden_chunk = sys.argv[1:6]
    extra = sys.argv[6:]
    out = {}
    async with transport(binary, index, extra) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server_name"] = init.server_info.name
            tools = await session.list_tools()
            out["tools"] = sorted(tool.name for tool in tools.tools)
            out["descriptions"] = {tool.name: tool.description for tool in tools.tools}
            search = await call(session, "search", {"query": query, "k": 3})
            out["search_paths"] = [hit["path"] for hit in search["hits"]]
            first = search["hits"][0]
            chunk = await call(session, "get_chunk", {"chunk_id": first["chunk_id"]})
            out["chunk_matches"] = chunk.get("text") == first["text"]
            section = await call(session, "get_section", {"chunk_id": first["chunk_id"]})
            out["section_ids"] = [c["chunk_id"] for c in section["chunks"]]
            out["first_id"] = first["chunk_id"]
            secret = await call(
                session, "search", {"query": secret_query, "k": 10, "mode": "lexical"}
            )
            out["secret_paths"] = [hit["path"] for hit in secret["hits"]]
            out["hidden_chunk"] = await call(session, "get_chunk", {"chunk_id": hidden_chunk})
            out["bad_request"] = await call(session, "search", {"query": "x", "k": 0})
            status = await call(session, "status", {})
            out["generation"] = status["generation"]
            out["labels"] = status["labels"]
    print(json.dumps(out))


asyncio.run(main())
