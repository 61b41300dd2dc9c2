#!/usr/bin/env node
// An example client program for ratecheck fleet --client-cmd, Node's
// standard library only: it retries only 429s and transport faults
// (resets, timeouts, 5xx), with exponential backoff and full jitter
// (sleep = random(0, min(cap, base * 2^attempt))), at most 4 attempts in
// all, and pauses before its next request after repeated 429s. It passes.
//
//     go run ./cmd/ratecheck fleet --client-cmd 'node examples/clients/node/full_jitter.js' --clients 50
//
// It reads what the fleet tells it from its environment: RATECHECK_BASE_URL,
// RATECHECK_SURFACE (rest or mcp) and RATECHECK_REQUESTS.
'use strict';

const http = require('node:http');
const https = require('node:https');

const BASE = process.env.RATECHECK_BASE_URL;
const SURFACE = process.env.RATECHECK_SURFACE || 'rest';
const REQUESTS = Number.parseInt(process.env.RATECHECK_REQUESTS || '', 10);
const BASE_DELAY = 500; // ms
const CAP = 8000; // ms
const ATTEMPTS = 4;
const TIMEOUT = 10000; // ms, per attempt

// send sends logical request i once and resolves to its status (0: no
// answer: a reset, a refused connection or a timeout).
function send(i) {
  const query = `rate limits ${i}`; // every logical request differs
  let url;
  let body = null;
  const options = { method: 'GET', headers: {} };
  if (SURFACE === 'mcp') {
    url = new URL(BASE + '/mcp');
    body = JSON.stringify({
      jsonrpc: '2.0', id: i, method: 'tools/call',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'example-node', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
        name: 'search', arguments: { query },
      },
    });
    options.method = 'POST';
    options.headers = {
      'Content-Type': 'application/json',
      'Accept': 'application/json, text/event-stream',
      'Content-Length': Buffer.byteLength(body),
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/call',
      'Mcp-Name': 'search',
    };
  } else {
    url = new URL(BASE + '/api/public/search');
    url.searchParams.set('q', query);
  }
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const done = (status) => {
      if (!settled) {
        settled = true;
        resolve(status);
      }
    };
    const req = transport.request(url, options, (res) => {
      res.on('data', () => {}); // read the answer to its end
      res.on('end', () => done(res.statusCode));
      res.on('error', () => done(0));
    });
    req.setTimeout(TIMEOUT, () => req.destroy(new Error('timeout')));
    req.on('error', () => done(0)); // a transport fault
    req.end(body);
  });
}

function retryable(status) {
  return status === 0 || status === 429 || status >= 500;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function main() {
  if (!BASE || !Number.isInteger(REQUESTS)) {
    console.error('run me under ratecheck fleet --client-cmd: RATECHECK_BASE_URL and RATECHECK_REQUESTS are not set');
    return 2;
  }
  for (let i = 1; i <= REQUESTS; i++) {
    let refusals = 0;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const status = await send(i);
      refusals = status === 429 ? refusals + 1 : 0;
      if (!retryable(status)) {
        break;
      }
      if (attempt + 1 < ATTEMPTS) {
        await sleep(Math.random() * Math.min(CAP, BASE_DELAY * 2 ** attempt)); // full jitter
      }
    }
    if (refusals >= 2) {
      await sleep(2 * BASE_DELAY); // repeated 429s: slow the whole client down
    }
  }
  return 0;
}

main().then((code) => { process.exitCode = code; });
