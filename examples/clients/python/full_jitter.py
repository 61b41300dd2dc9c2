#!/usr/bin/env python3
"""An example client program for ratecheck fleet --client-cmd, standard
library only: it retries only 429s and transport faults (resets, timeouts,
5xx), with exponential backoff and full jitter, at most 4 attempts in all,
and pauses before its next request after repeated 429s. It passes.

    go run ./cmd/ratecheck fleet --client-cmd 'python3 examples/clients/python/full_jitter.py' --clients 50
"""
import json
import os
import random
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

BASE = os.environ["RATECHECK_BASE_URL"]
SURFACE = os.environ.get("RATECHECK_SURFACE", "rest")
REQUESTS = int(os.environ["RATECHECK_REQUESTS"])
BASE_DELAY, CAP, ATTEMPTS = 0.5, 8.0, 4


def send(i):
    """Send logical request i once; return its status (0: no answer)."""
    query = "rate limits %d" % i  # every logical request differs
    if SURFACE == "mcp":
        body = json.dumps({
            "jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "example-python", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
                "name": "search", "arguments": {"query": query},
            },
        }).encode()
        req = urllib.request.Request(BASE + "/mcp", data=body, method="POST", headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "search",
        })
    else:
        req = urllib.request.Request(BASE + "/api/public/search?" + urllib.parse.urlencode({"q": query}))
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code
    except OSError:  # reset, refused, timeout: a transport fault
        return 0


def retryable(status):
    return status == 0 or status == 429 or status >= 500


def main():
    for i in range(1, REQUESTS + 1):
        refusals = 0
        for attempt in range(ATTEMPTS):
            status = send(i)
            refusals = refusals + 1 if status == 429 else 0
            if not retryable(status):
                break
            if attempt + 1 < ATTEMPTS:
                time.sleep(random.uniform(0, min(CAP, BASE_DELAY * 2 ** attempt)))
        if refusals >= 2:
            time.sleep(2 * BASE_DELAY)  # repeated 429s: slow the whole client down
    return 0


if __name__ == "__main__":
    sys.exit(main())
