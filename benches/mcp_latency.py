"""Warm `search` latency through MCP (the official Python SDK over stdio), for
benches/serve_latency.sh. usage: mcp_latency.py BINARY INDEX QUESTIONS N -> one JSON line."""

import asyncio
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main():
    binary, index, questions_file, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with open(questions_file) as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()]
    params = StdioServerParameters(command=binary, args=["serve", "--mcp", "--index", index])
    async with stdio_client(params) as (read, write):
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
    print(json.dumps({"via": "mcp", "requests": n, "p50_ms": pick(0.5), "p99_ms": pick(0.99)}))


asyncio.run(main())
