"""``cog serve``: runs over HTTP with server-sent events, and the Studio page that draws them.

- :mod:`.auth` — the token, and the Host/Origin checks that keep other sites out;
- :mod:`.live_runs` — the runs in flight (and a while after): their wire events, approvals, abort;
- :mod:`.sse` — the framing: ``id: <seq>`` / ``data: <event json>`` / ``: keep-alive`` / ``data: [DONE]``;
- :mod:`.asgi_app` — the routes (``/api/…`` and the page);
- ``static/`` — the Studio page: plain HTML, CSS and JavaScript, no build step.

Nothing here is imported by ``cog --help``: starlette and uvicorn load only in ``cog serve``.
"""
