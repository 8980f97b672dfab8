"""``nerve ui``: the log as web pages on loopback (timeline, events, live, SQL, audit, …).

- :mod:`nerve.ui.data` — every read and write the pages make, over the library;
- :mod:`nerve.ui.app` — the Starlette routes, HTML or JSON at the same URL;
- :mod:`nerve.ui.guard` — Host, Origin, login, CSRF and security headers on every request;
- :mod:`nerve.ui.auth` — the per-workspace token and the login cookie;
- :mod:`nerve.ui.server` — uvicorn on a loopback socket, and the login URL.
"""
