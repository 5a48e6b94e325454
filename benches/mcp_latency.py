"""Warm `search` latency through MCP (the official Python SDK over stdio, or over streamable
HTTP to a running `serve --http` at URL/mcp), for benches/serve_latency.sh.
usage: mcp_latency.py BINARY INDEX QUESTIONS N [URL] -> one JSON line."""

import asyncio
import contextlib
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


@contextlib.asynccontextmanager
async def transport(binary, index, url):
    if url:
        from mcp.client.streamable_http import streamable_http_client

        async with streamable_http_client(url + "/mcp") as streams:
            yield streams[0], streams[1]
        return
    params = StdioServerParameters(command=binary, args=["serve", "--mcp", "--index", index])
    async with stdio_client(params) as (read, write):
        yield read, write


async def main():
    binary, index, questions_file, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    url = sys.argv[5] if len(sys.argv) > 5 else None
    with open(questions_file) as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()]
    async with transport(binary, index, url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for q in questions:
                await session.call_tool("search", {"query": q, "k": 5})
            latencies = []
            for i in range(n):
                t = time.perf_counter()
                await session.call_tool("search", {"query": questions[i % len(questions)], "k": 5})
                latencies.append((time.perf_counter() - t) * 1000)
    latencies.sort()
    pick = lambda q: latencies[max(0, min(len(latencies) - 1, int(len(latencies) * q + 0.999) - 1))]
    print(json.dumps({"via": "mcp-http" if url else "mcp", "requests": n, "p50_ms": pick(0.5), "p99_ms": pick(0.99)}))


asyncio.run(main())
