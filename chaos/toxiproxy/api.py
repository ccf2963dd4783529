"""The Toxiproxy v2 HTTP API: routes, status codes and bodies as upstream's ``api.go`` (ring: drivers).

==========================================  =======  ==========================================
route                                       success  body
==========================================  =======  ==========================================
GET /version                                200      ``{"version": "X"}\\n``
POST /reset                                 204      —
GET /proxies                                200      object name → proxy (names sorted)
POST /proxies                               201      proxy
POST /populate                              201      ``{"proxies": [...]}`` (``null`` if none)
GET /proxies/{p}                            200      proxy
POST|PATCH /proxies/{p}                     200      proxy
DELETE /proxies/{p}                         204      —
GET /proxies/{p}/toxics                     200      array of toxics
POST /proxies/{p}/toxics                    200      toxic
GET /proxies/{p}/toxics/{t}                 200      toxic
POST|PATCH /proxies/{p}/toxics/{t}          200      toxic
DELETE /proxies/{p}/toxics/{t}              204      —
==========================================  =======  ==========================================

Errors go out through Go's ``http.Error``: ``text/plain; charset=utf-8``, ``X-Content-Type-Options:
nosniff``, body ``{"error":"…","status":N}\\n``. An unknown path is mux's ``404 page not found``; a
known path with another method is an empty 405; a ``User-Agent`` starting ``Mozilla/`` gets 403
``User agent not allowed`` on every known route. Every routed response has an
``X-Toxiproxy-Request-Id``. ``POST /populate`` answers errors as JSON with the proxies created so far.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from chaos.toxiproxy import log
from chaos.toxiproxy.errors import ApiError
from chaos.toxiproxy.gojson import encode_json
from chaos.toxiproxy.http import Request, Response
from chaos.toxiproxy.model import (
    VERSION,
    error_body,
    parse_populate,
    parse_proxy_input,
    require_create_fields,
)
from chaos.toxiproxy.proxy import ProxyCollection

JSON = "application/json"
_XID_ALPHABET = "0123456789abcdefghijklmnopqrstuv"

Route = Callable[["Api", Request, dict[str, str]], Awaitable[Response]]


def _json(status: int, value: Any) -> Response:
    return Response(status, encode_json(value), {"Content-Type": JSON})


def _empty(status: int) -> Response:
    return Response(status)


def _error(error: ApiError) -> Response:
    return _http_error(error.status, error_body(error))


def _http_error(status: int, body: bytes) -> Response:
    headers = {"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"}
    return Response(status, body, headers)


@dataclass
class Api:
    """Request → response over a :class:`ProxyCollection`."""

    proxies: ProxyCollection

    async def handle(self, request: Request) -> Response:
        matched = _match(request.path)
        if matched is None:
            return _http_error(404, b"404 page not found\n")
        methods, params = matched
        route = methods.get(request.method)
        if route is None:
            return _empty(405)
        request_id = "".join(secrets.choice(_XID_ALPHABET) for _ in range(20))
        if request.headers.get("user-agent", "").startswith("Mozilla/"):
            response = _http_error(403, b"User agent not allowed\n")
        else:
            try:
                response = await route(self, request, params)
            except ApiError as exc:
                response = _error(exc)
            except Exception as exc:  # a bug here must not kill the API: Go's apiError gives 500
                log.error("Handler failed", method=request.method, url=request.path, error=repr(exc))
                response = _error(ApiError(str(exc) or type(exc).__name__, 500))
        log.debug("", method=request.method, url=request.path, status=response.status, request_id=request_id)
        return Response(
            response.status, response.body, {**response.headers, "X-Toxiproxy-Request-Id": request_id}
        )

    # --- server --------------------------------------------------------------------------------

    async def version(self, request: Request, params: dict[str, str]) -> Response:
        body = f'{{"version": "{VERSION}"}}\n'.encode()
        return Response(200, body, {"Content-Type": "application/json;charset=utf-8"})

    async def reset(self, request: Request, params: dict[str, str]) -> Response:
        await self.proxies.reset()
        return _empty(204)

    async def populate(self, request: Request, params: dict[str, str]) -> Response:
        try:
            entries = parse_populate(request.body)
        except ApiError as exc:
            return _json(exc.status, {"error": exc.message, "status": exc.status, "proxies": None})
        done, error = await self.proxies.populate(entries)
        proxies = [p.to_json() for p in done] or None
        if error is None:
            return _json(201, {"proxies": proxies})
        return _json(error.status, {"error": error.message, "status": error.status, "proxies": proxies})

    # --- proxies -------------------------------------------------------------------------------

    async def proxy_index(self, request: Request, params: dict[str, str]) -> Response:
        return _json(
            200, {name: self.proxies.proxies[name].to_json() for name in sorted(self.proxies.proxies)}
        )

    async def proxy_create(self, request: Request, params: dict[str, str]) -> Response:
        given = parse_proxy_input(request.body)
        require_create_fields(given)
        proxy = self.proxies.new_proxy(given.name or "", given.listen or "", given.upstream or "")
        await self.proxies.add(proxy, given.enabled is not False)
        return _json(201, proxy.to_json())

    async def proxy_show(self, request: Request, params: dict[str, str]) -> Response:
        return _json(200, self.proxies.get(params["proxy"]).to_json())

    async def proxy_update(self, request: Request, params: dict[str, str]) -> Response:
        proxy = self.proxies.get(params["proxy"])
        await proxy.update(parse_proxy_input(request.body))
        return _json(200, proxy.to_json())

    async def proxy_delete(self, request: Request, params: dict[str, str]) -> Response:
        await self.proxies.remove(params["proxy"])
        return _empty(204)

    # --- toxics --------------------------------------------------------------------------------

    async def toxic_index(self, request: Request, params: dict[str, str]) -> Response:
        proxy = self.proxies.get(params["proxy"])
        return _json(200, [t.to_json() for t in proxy.toxics.toxics()])

    async def toxic_create(self, request: Request, params: dict[str, str]) -> Response:
        proxy = self.proxies.get(params["proxy"])
        return _json(200, (await proxy.toxics.add(request.body)).to_json())

    async def toxic_show(self, request: Request, params: dict[str, str]) -> Response:
        proxy = self.proxies.get(params["proxy"])
        return _json(200, proxy.toxics.get(params["toxic"]).to_json())

    async def toxic_update(self, request: Request, params: dict[str, str]) -> Response:
        proxy = self.proxies.get(params["proxy"])
        return _json(200, (await proxy.toxics.update(params["toxic"], request.body)).to_json())

    async def toxic_delete(self, request: Request, params: dict[str, str]) -> Response:
        proxy = self.proxies.get(params["proxy"])
        await proxy.toxics.remove(params["toxic"])
        return _empty(204)


_ROUTES: list[tuple[re.Pattern[str], dict[str, Route]]] = [
    (re.compile(r"/reset"), {"POST": Api.reset}),
    (re.compile(r"/proxies"), {"GET": Api.proxy_index, "POST": Api.proxy_create}),
    (re.compile(r"/populate"), {"POST": Api.populate}),
    (
        re.compile(r"/proxies/(?P<proxy>[^/]+)"),
        {
            "GET": Api.proxy_show,
            "POST": Api.proxy_update,
            "PATCH": Api.proxy_update,
            "DELETE": Api.proxy_delete,
        },
    ),
    (re.compile(r"/proxies/(?P<proxy>[^/]+)/toxics"), {"GET": Api.toxic_index, "POST": Api.toxic_create}),
    (
        re.compile(r"/proxies/(?P<proxy>[^/]+)/toxics/(?P<toxic>[^/]+)"),
        {
            "GET": Api.toxic_show,
            "POST": Api.toxic_update,
            "PATCH": Api.toxic_update,
            "DELETE": Api.toxic_delete,
        },
    ),
    (re.compile(r"/version"), {"GET": Api.version}),
]


def _match(path: str) -> tuple[dict[str, Route], dict[str, str]] | None:
    for pattern, methods in _ROUTES:
        found = pattern.fullmatch(path)
        if found is not None:
            return methods, found.groupdict()
    return None
