#!/usr/bin/env python3
"""An example of a client that FAILS ratecheck fleet --client-cmd: it
retries at a fixed interval, so clients refused together retry together
and re-collide at every attempt."""
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

BASE = os.environ["RATECHECK_BASE_URL"]
REQUESTS = int(os.environ["RATECHECK_REQUESTS"])


def send(i):
    req = urllib.request.Request(BASE + "/api/public/search?" + urllib.parse.urlencode({"q": "rate limits %d" % i}))
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code
    except OSError:
        return 0


for i in range(1, REQUESTS + 1):
    for attempt in range(4):
        status = send(i)
        if status != 0 and status != 429 and status < 500:
            break
        time.sleep(2.0)  # the same wait for everyone: lockstep
sys.exit(0)
