"""Send the same pushes as `herald push send` with Python httpx over HTTP/2: the baseline of
scripts/bench-client.sh. Usage: bench-client.py URL CA AUTH_FILE TOKENS_FILE PAYLOAD_FILE CONCURRENCY"""
import asyncio
import sys
import time

import httpx


async def main():
    url, ca, auth_file, tokens_file, payload_file, concurrency = sys.argv[1:7]
    auth = open(auth_file).read().strip()
    tokens = [t.strip() for t in open(tokens_file) if t.strip()]
    payload = open(payload_file, "rb").read()
    limit = asyncio.Semaphore(int(concurrency))
    headers = {"authorization": auth, "apns-topic": "com.example.bench", "apns-push-type": "alert"}
    statuses = {}
    async with httpx.AsyncClient(http2=True, verify=ca, timeout=60,
                                 limits=httpx.Limits(max_connections=2, max_keepalive_connections=2)) as client:
        async def send(token):
            async with limit:
                r = await client.post(f"{url}/3/device/{token}", content=payload, headers=headers)
                statuses[r.status_code] = statuses.get(r.status_code, 0) + 1

        start = time.monotonic()
        await asyncio.gather(*(send(t) for t in tokens))
        elapsed = time.monotonic() - start
    print(f"{len(tokens) / elapsed:.0f} {elapsed:.3f} {statuses}")


asyncio.run(main())
