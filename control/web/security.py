"""HTTP hardening of Mission Control (docs/architecture.md "Mission Control"): response headers, the
session cookie and CSRF tokens.

Every response carries a Content-Security-Policy that allows scripts, styles and images from the
console itself only (no inline script or style, no plugins, no framing, forms posting only here),
``X-Frame-Options: DENY``, ``nosniff``, ``no-referrer`` and ``no-store``. The session cookie holds only
a random session id, signed (itsdangerous) and time-limited, ``HttpOnly``, ``SameSite=Strict``, and
``Secure`` when the console is served over TLS. Every form carries the session's CSRF token (or, on
the sign-in page, the pre-session token of its own cookie), compared in constant time.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Final

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import Response

SESSION_COOKIE: Final = "mc_session"
PRESESSION_COOKIE: Final = "mc_signin"
CSRF_FIELD: Final = "csrf_token"

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}


class SecurityHeaders(BaseHTTPMiddleware):
    """Sets :data:`HEADERS` on every response (``Strict-Transport-Security`` too over TLS)."""

    def __init__(self, app: object, *, tls: bool) -> None:
        super().__init__(app)  # type: ignore[arg-type]
        self._tls = tls

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await call_next(request)
        for name, value in HEADERS.items():
            response.headers[name] = value
        if self._tls:
            response.headers["Strict-Transport-Security"] = "max-age=31536000"
        return response


class CookieSigner:
    """Signs and reads cookie values with a per-process secret (a restart signs everyone out)."""

    def __init__(self, max_age_seconds: int, secret: bytes | None = None) -> None:
        self._serializer = URLSafeTimedSerializer(secret or secrets.token_bytes(32), salt="mission-control")
        self._max_age = max_age_seconds

    def sign(self, value: str) -> str:
        return self._serializer.dumps(value)

    def read(self, signed: str | None) -> str | None:
        """The value, or ``None`` when absent, forged or older than the cookie's lifetime."""
        if not signed:
            return None
        try:
            value = self._serializer.loads(signed, max_age=self._max_age)
        except BadSignature:
            return None
        return value if isinstance(value, str) else None


def set_cookie(response: Response, name: str, value: str, *, max_age: int, tls: bool) -> None:
    """Set a console cookie: HttpOnly, SameSite=Strict, path ``/``, Secure over TLS."""
    response.set_cookie(name, value, max_age=max_age, httponly=True, samesite="strict", secure=tls, path="/")


def tokens_match(expected: str, given: object) -> bool:
    """Constant-time comparison of a CSRF token with what a form sent."""
    return isinstance(given, str) and bool(given) and hmac.compare_digest(expected, given)
