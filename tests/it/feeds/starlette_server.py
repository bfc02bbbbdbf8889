"""A feed served by sse-starlette (PyPI), an SSE server nobody here wrote:
COUNT numbered events on `starlette/seq`, one every 50 ms, `event: tick`,
ids 1..COUNT, resumed after Last-Event-ID; its own `: ping` comments every
second. Usage: starlette_server.py PORT COUNT"""

import asyncio
import json
import sys

import uvicorn
from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.routing import Route

PORT, COUNT = int(sys.argv[1]), int(sys.argv[2])


async def stream(request):
    try:
        after = int(request.headers.get("last-event-id") or 0)
    except ValueError:
        after = 0

    async def events():
        for n in range(after + 1, COUNT + 1):
            data = json.dumps({"topic": "starlette/seq", "seq": n})
            yield ServerSentEvent(data=data, id=str(n), event="tick")
            await asyncio.sleep(0.05)
        while True:
            await asyncio.sleep(1)

    return EventSourceResponse(events(), ping=1)


app = Starlette(routes=[Route("/feed/numbers", stream)])
uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
