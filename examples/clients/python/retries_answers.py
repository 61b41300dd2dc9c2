#!/usr/bin/env python3
"""An example of a client that FAILS ratecheck fleet --client-cmd: it
retries every error, a 422 included, although an answer repeats whatever
the client does. Its backoff is full jitter, so only the retried answer
fails it."""
import os
import random
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
        if send(i) == 200:
            break
        time.sleep(random.uniform(0, min(8.0, 0.5 * 2 ** attempt)))  # retries anything that is not a 200
sys.exit(0)
